package client

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/protocol/status"
)

func newTestMetrics(t testing.TB, reader sdkmetric.Reader) *clientMetrics {
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	m, err := newClientMetrics(mp, &Client{})
	require.NoError(t, err)
	t.Cleanup(m.close)
	return m
}

// TestMetricsRecordingAllocatesNothing: with an SDK MeterProvider, the
// per-call recording (duration, attempts and sizes by method and code)
// allocates nothing once the method has its row and each series exists.
func TestMetricsRecordingAllocatesNothing(t *testing.T) {
	m := newTestMetrics(t, sdkmetric.NewManualReader())
	refused := status.New(protocol.CodeResourceExhausted, "full")
	record := func() {
		start := time.Now()
		m.call("echo/Echo", start, nil, 1, 10, 20)
		m.call("echo/Echo", start, refused, 2, 10, -1)
		m.call("svc/M", start, context.Canceled, 0, 10, -1)
		m.call("svc/M", start, context.DeadlineExceeded, 1, 10, -1)
	}
	record() // the first call of a method builds its row; the first measurement of a series creates it
	if n := testing.AllocsPerRun(1000, record); n != 0 {
		t.Fatalf("recording allocates %.2f per call, want 0", n)
	}
}

// TestMetricsMethodsBeyondTheBoundAreOther: the first maxMetricMethods
// methods get their own series; every later one is _OTHER, and the cache
// stops growing.
func TestMetricsMethodsBeyondTheBoundAreOther(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	m := newTestMetrics(t, reader)
	for i := range maxMetricMethods {
		m.call("svc/M"+strconv.Itoa(i), time.Now(), nil, 1, 1, 1)
	}
	m.call("svc/M0", time.Now(), nil, 1, 1, 1) // cached
	m.call("svc/beyond", time.Now(), nil, 1, 1, 1)
	m.call("svc/beyond2", time.Now(), status.New(protocol.CodeNotFound, "x"), 1, 1, -1)
	assert.Len(t, *m.rows.Load(), maxMetricMethods)
	assert.Same(t, m.other, m.row("svc/beyond3"))

	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	counts := map[string]uint64{}
	for _, sm := range rm.ScopeMetrics {
		for _, mt := range sm.Metrics {
			if mt.Name != "rpc.client.call.duration" {
				continue
			}
			for _, p := range mt.Data.(metricdata.Histogram[float64]).DataPoints {
				method, _ := p.Attributes.Value(attribute.Key("rpc.method"))
				code, _ := p.Attributes.Value(attribute.Key("rpc.response.status_code"))
				counts[method.AsString()+" "+code.AsString()] += p.Count
			}
		}
	}
	assert.Len(t, counts, maxMetricMethods+2)
	assert.Equal(t, uint64(2), counts["svc/M0 OK"])
	assert.Equal(t, uint64(1), counts["_OTHER OK"])
	assert.Equal(t, uint64(1), counts["_OTHER NotFound"])
}

// BenchmarkMetricsRecording is the per-call cost a MeterProvider adds to a
// unary call: the clock reads, the cache lookup and the four histogram
// records.
func BenchmarkMetricsRecording(b *testing.B) {
	m := newTestMetrics(b, sdkmetric.NewManualReader())
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			m.call("echo/Echo", time.Now(), nil, 1, 10, 20)
		}
	})
}

// TestCodeOfIsStatusCode: the metrics' allocation-free code agrees with
// status.Code on every kind of error a call returns.
func TestCodeOfIsStatusCode(t *testing.T) {
	for _, err := range []error{
		nil, errClientClosed, status.New(protocol.CodeNotFound, "x"), context.Canceled, context.DeadlineExceeded,
		fmt.Errorf("wrapped: %w", status.New(protocol.CodeUnavailable, "x")), fmt.Errorf("wrapped: %w", context.Canceled),
		&waitError{addr: "a:1", stage: "dialing", err: context.DeadlineExceeded}, errors.New("plain"),
	} {
		assert.Equal(t, status.Code(err), codeOf(err), "%v", err)
	}
}

// BenchmarkMetricsRecordingSerial is BenchmarkMetricsRecording on one
// goroutine: the recording's own cost, without contention on the SDK's
// per-series locks.
func BenchmarkMetricsRecordingSerial(b *testing.B) {
	m := newTestMetrics(b, sdkmetric.NewManualReader())
	b.ReportAllocs()
	for b.Loop() {
		m.call("echo/Echo", time.Now(), nil, 1, 10, 20)
	}
}
