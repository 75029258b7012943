package concurrency_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/limiters/concurrency"
	"github.com/sluicerpc/sluice/spi"
)

var decisionSink spi.Decision

// BenchmarkAcquireRelease is the uncontended immediate path: one grant and
// its release.
func BenchmarkAcquireRelease(b *testing.B) {
	l := concurrency.New(1)
	b.ReportAllocs()
	for b.Loop() {
		if !l.TryAcquire(zero, 1).Granted {
			b.Fatal("refused")
		}
		l.Release(zero, 1)
	}
}

// BenchmarkAcquireReleaseParallel is the immediate path with every P hitting
// the same word; the limit is high enough that nobody is refused.
func BenchmarkAcquireReleaseParallel(b *testing.B) {
	l := concurrency.New(concurrency.MaxLimit)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if !l.TryAcquire(zero, 1).Granted {
				b.Error("refused")
				return
			}
			l.Release(zero, 1)
		}
	})
}

// BenchmarkTryAcquireRefused is a refusal at the limit (the path a queued
// request's retry takes).
func BenchmarkTryAcquireRefused(b *testing.B) {
	l := concurrency.New(1)
	if !l.TryAcquire(zero, 1).Granted {
		b.Fatal("refused")
	}
	b.ReportAllocs()
	for b.Loop() {
		decisionSink = l.TryAcquire(zero, 1)
	}
	if decisionSink.Granted {
		b.Fatal("granted over the limit")
	}
}

func TestAcquireReleaseAllocatesNothing(t *testing.T) {
	l := concurrency.New(1)
	var viaSPI spi.Limiter = l

	tests := []struct {
		name string
		f    func()
	}{
		{"TryAcquire+Release", func() {
			decisionSink = l.TryAcquire(zero, 1)
			l.Release(zero, 1)
		}},
		{"TryAcquire+Cancel via spi.Limiter", func() {
			decisionSink = viaSPI.TryAcquire(zero, 1)
			viaSPI.Cancel(zero, 1)
		}},
		{"refused TryAcquire", func() {
			l.TryAcquire(zero, 1)
			decisionSink = l.TryAcquire(zero, 1)
			l.Release(zero, 1)
		}},
		{"Snapshot", func() { _ = viaSPI.Snapshot(zero) }},
		{"Resize", func() { l.Resize(2); l.Resize(1) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			allocs := testing.AllocsPerRun(1000, tt.f)
			require.Zero(t, allocs, "allocations per run")
			require.Zero(t, l.Held())
		})
	}
}
