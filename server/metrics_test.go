package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/sluicerpc/sluice/kernel"
	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/server"
)

// metricsReader is an SDK MeterProvider with a ManualReader.
type metricsReader struct {
	t      testing.TB
	mp     *sdkmetric.MeterProvider
	reader *sdkmetric.ManualReader
	rm     metricdata.ResourceMetrics
}

func newMetricsReader(t testing.TB) *metricsReader {
	r := &metricsReader{t: t, reader: sdkmetric.NewManualReader()}
	r.mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(r.reader))
	t.Cleanup(func() { _ = r.mp.Shutdown(context.Background()) })
	return r
}

func (r *metricsReader) collect() {
	r.t.Helper()
	r.rm = metricdata.ResourceMetrics{}
	require.NoError(r.t, r.reader.Collect(context.Background(), &r.rm))
}

// awaitCount collects until the histogram name has want data points with
// kv, failing after a bound that only a broken server reaches: calls are
// recorded right after their answer is written, so a client that has its
// answer may collect an instant too early.
func (r *metricsReader) awaitCount(want uint64, name string, kv ...string) {
	r.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		r.collect()
		got := r.count(name, kv...)
		if got == want || time.Now().After(deadline) {
			require.Equal(r.t, want, got, "%s %v", name, kv)
			return
		}
		time.Sleep(time.Millisecond)
	}
}

func (r *metricsReader) metric(name string) (metricdata.Metrics, bool) {
	for _, sm := range r.rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == name {
				return m, true
			}
		}
	}
	return metricdata.Metrics{}, false
}

// has reports whether set holds every key=value of kv (pairs).
func has(set attribute.Set, kv ...string) bool {
	for i := 0; i < len(kv); i += 2 {
		v, ok := set.Value(attribute.Key(kv[i]))
		if !ok || v.AsString() != kv[i+1] {
			return false
		}
	}
	return true
}

// value is the sum of the points of the counter or gauge name whose
// attributes hold kv.
func (r *metricsReader) value(name string, kv ...string) int64 {
	r.t.Helper()
	m, ok := r.metric(name)
	require.True(r.t, ok, "no metric %s", name)
	var n int64
	switch d := m.Data.(type) {
	case metricdata.Sum[int64]:
		for _, p := range d.DataPoints {
			if has(p.Attributes, kv...) {
				n += p.Value
			}
		}
	case metricdata.Gauge[int64]:
		for _, p := range d.DataPoints {
			if has(p.Attributes, kv...) {
				n += p.Value
			}
		}
	default:
		r.t.Fatalf("%s: unexpected data %T", name, m.Data)
	}
	return n
}

// count is the number of measurements of the histogram name whose
// attributes hold kv.
func (r *metricsReader) count(name string, kv ...string) uint64 {
	r.t.Helper()
	m, ok := r.metric(name)
	if !ok {
		return 0
	}
	var n uint64
	switch d := m.Data.(type) {
	case metricdata.Histogram[float64]:
		for _, p := range d.DataPoints {
			if has(p.Attributes, kv...) {
				n += p.Count
			}
		}
	case metricdata.Histogram[int64]:
		for _, p := range d.DataPoints {
			if has(p.Attributes, kv...) {
				n += p.Count
			}
		}
	default:
		r.t.Fatalf("%s: unexpected data %T", name, m.Data)
	}
	return n
}

func callAttrs(method, code string) []string {
	return []string{"rpc.system.name", "sluice", "rpc.method", method, "rpc.response.status_code", code}
}

// TestMetricsReportCallsAndAdmission: with a MeterProvider, every call is
// in rpc.server.call.duration by method and code (a refused one with its
// code, an unknown method as _OTHER), and sluice's own metrics report the
// admission, queue, scope, generation and connection figures of the moment.
func TestMetricsReportCallsAndAdmission(t *testing.T) {
	mr := newMetricsReader(t)
	s := startServer(t, server.Options{MeterProvider: mr.mp})
	o := holdRule(1)
	o.Queue = kernel.QueuePolicy{MaxQueuedCalls: 1, MaxQueuedBytes: 1 << 20, MaxQueueDelay: time.Minute}
	gen, err := s.Admission().Enable(o)
	require.NoError(t, err)
	c := dialRaw(t, s.addr)

	c.send("echo", "Hold", []byte("one"), nil)
	<-s.mux.entered
	c.send("echo", "Hold", []byte("two"), nil) // queued
	// The reader handles a connection's requests in order: once Say is
	// answered, the second Hold is in the queue.
	assert.Equal(t, "free", string(c.call("echo", "Say", []byte("free")).body))
	r := c.call("echo", "Hold", []byte("three"))
	require.NotNil(t, r.err)
	require.Equal(t, "queue_full", r.err.Reason)
	r = c.call("echo", "Fail", nil)
	require.NotNil(t, r.err)
	id := c.send("echo", "Say", nil, func(req *protocol.Request) { req.Service = 99 })
	r = c.next()
	require.Equal(t, id, r.id)
	require.Equal(t, protocol.CodeUnimplemented, r.err.Code)

	mr.collect()
	scope := s.Stats().Admission.Scopes[0].Name
	assert.Equal(t, int64(1), mr.value("sluice.admission.queue.calls"))
	assert.Equal(t, int64(len("two")+2), mr.value("sluice.admission.queue.bytes"))
	assert.Equal(t, int64(1), mr.value("sluice.admission.active", "scope", scope))
	assert.Equal(t, int64(1), mr.value("sluice.admission.limit", "scope", scope))
	assert.Equal(t, int64(1), mr.value("sluice.admission.waiters", "scope", scope))
	assert.Equal(t, int64(gen), mr.value("sluice.admission.generation"))
	assert.Equal(t, int64(1), mr.value("sluice.admission.programs", "state", "current"))
	assert.Equal(t, int64(0), mr.value("sluice.admission.programs", "state", "retired"))
	assert.Equal(t, int64(1), mr.value("sluice.admission.queued"))
	assert.Equal(t, int64(3), mr.value("sluice.admission.granted"), "the first Hold, Say and Fail")
	assert.Equal(t, int64(1), mr.value("sluice.server.calls.refused", "reason", "queue_full"))
	assert.Equal(t, int64(1), mr.value("sluice.admission.refused", "scope", scope, "reason", "queue_full"), "the scope that refused it")
	assert.Equal(t, int64(1), mr.value("sluice.server.calls.refused", "reason", "unimplemented"))
	assert.Equal(t, int64(1), mr.value("sluice.server.connections.live"))
	assert.Equal(t, int64(1), mr.value("sluice.server.connections.admitted"))
	assert.Equal(t, int64(1), mr.value("sluice.server.calls.reservations", "state", "active"), "the running Hold (the queued one reserves on its grant)")
	mr.awaitCount(1, "rpc.server.call.duration", callAttrs("echo/Say", "OK")...)
	mr.awaitCount(1, "rpc.server.call.duration", append(callAttrs("echo/Hold", "ResourceExhausted"), "error.type", "ResourceExhausted")...)
	mr.awaitCount(1, "rpc.server.call.duration", callAttrs("echo/Fail", "NotFound")...)
	mr.awaitCount(1, "rpc.server.call.duration", callAttrs("_OTHER", "Unimplemented")...)
	assert.Equal(t, uint64(0), mr.count("rpc.server.call.duration", callAttrs("echo/Hold", "OK")...), "both Holds are still running")
	assert.Equal(t, uint64(0), mr.count("sluice.admission.queue.delay"))

	close(s.mux.block)
	for range 2 {
		require.Nil(t, c.next().err)
	}
	mr.collect()
	mr.awaitCount(2, "rpc.server.call.duration", callAttrs("echo/Hold", "OK")...)
	mr.awaitCount(2, "rpc.server.request.size", callAttrs("echo/Hold", "OK")...)
	mr.awaitCount(2, "rpc.server.response.size", callAttrs("echo/Hold", "OK")...)
	assert.Equal(t, uint64(0), mr.count("rpc.server.request.size", callAttrs("_OTHER", "Unimplemented")...), "a refused call has no size")
	assert.Equal(t, uint64(1), mr.count("sluice.admission.queue.delay", "outcome", "granted"))
	assert.Equal(t, int64(4), mr.value("sluice.admission.granted"))
}
