package server

import (
	"context"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/sluicerpc/sluice/protocol"
)

// TestMetricsRecordingAllocatesNothing: with an SDK MeterProvider, the
// per-call recording (duration and sizes by method and code, the queue
// delay) allocates nothing once each series exists: the attribute sets
// are precomputed at New.
func TestMetricsRecordingAllocatesNothing(t *testing.T) {
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	defer func() { _ = mp.Shutdown(t.Context()) }()
	mux := NewMux()
	mux.HandleRaw("echo", "Say", func(_ context.Context, req []byte) ([]byte, error) { return req, nil })
	s, err := New(mux, Options{MeterProvider: mp})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	m, md := s.metrics, &s.methods[0][0]
	record := func() {
		start := m.now()
		m.call(md, protocol.CodeOK, start, 10, 20)
		m.call(md, protocol.CodeResourceExhausted, start, -1, -1)
		m.call(nil, protocol.CodeUnimplemented, start, -1, -1)
		m.dequeued(start, queueGranted)
	}
	record() // the first measurement of a series creates it
	if n := testing.AllocsPerRun(1000, record); n != 0 {
		t.Fatalf("recording allocates %.2f per call, want 0", n)
	}
}

// BenchmarkMetricsRecording is the per-call cost a MeterProvider adds to a
// unary call: the clock read and the three histogram records.
func BenchmarkMetricsRecording(b *testing.B) {
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	defer func() { _ = mp.Shutdown(b.Context()) }()
	mux := NewMux()
	mux.HandleRaw("echo", "Say", func(_ context.Context, req []byte) ([]byte, error) { return req, nil })
	s, err := New(mux, Options{MeterProvider: mp})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	m, md := s.metrics, &s.methods[0][0]
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			m.call(md, protocol.CodeOK, m.now(), 10, 20)
		}
	})
}
