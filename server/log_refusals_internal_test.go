package server

import (
	"context"
	"log/slog"
	"testing"
)

// TestRequestRefusalCostsOneAtomicAdd: what a refused request pays for
// its log line is counters.refused (one atomic add; no lock, no clock
// read, no allocation) while the periodic flush runs; the flush reads the
// count.
func TestRequestRefusalCostsOneAtomicAdd(t *testing.T) {
	var st counters
	l := newRequestRefusalLog(slog.New(slog.DiscardHandler), &st)
	ctx, cancel := context.WithCancel(context.Background())
	l.start(ctx)
	if n := testing.AllocsPerRun(1000, func() { st.refused(dropQueueFull) }); n != 0 {
		t.Fatalf("a refusal allocates %v times", n)
	}
	cancel()
	l.stop()
	if got := l.logged[dropQueueFull]; got != 1001 {
		t.Fatalf("the final flush reported %d refusals, want 1001", got)
	}
}

// BenchmarkRequestRefusalCount is the refusal path's logging cost.
func BenchmarkRequestRefusalCount(b *testing.B) {
	var st counters
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			st.refused(dropConcurrency)
		}
	})
}
