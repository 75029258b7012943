package window_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/limiters/window"
	"github.com/sluicerpc/sluice/spi"
)

var decisionSink spi.Decision

// benchLimiter runs the three benchmarks of one kind:
//
//   - permit: uncontended grants (the clock moves on by a window every
//     2^20 grants, so windows and segments also advance);
//   - reject: refusals with their exact retry instant, against a full
//     window with an inherited barrier;
//   - permit-parallel: grants with every P on the same limiter.
func benchLimiter(b *testing.B, build func(limit int64) spi.Limiter) {
	b.Run("permit", func(b *testing.B) {
		l := build(window.MaxPermitLimit)
		now := t0
		i := 0
		b.ReportAllocs()
		for b.Loop() {
			if i++; i&(1<<20-1) == 0 {
				now = now.Add(time.Hour)
			}
			if !l.TryAcquire(now, 1).Granted {
				b.Fatal("refused")
			}
		}
	})
	b.Run("reject", func(b *testing.B) {
		l := build(10)
		l.(spi.Inheritor).Inherit(t0, []spi.Usage{{Units: 2, Until: t0.Add(90 * time.Minute)}})
		for range 8 {
			l.TryAcquire(t0, 1)
		}
		b.ReportAllocs()
		for b.Loop() {
			decisionSink = l.TryAcquire(t0, 1)
		}
		if decisionSink.Hint != spi.HintAt {
			b.Fatalf("not refused with a hint: %v", show(decisionSink))
		}
	})
	b.Run("permit-parallel", func(b *testing.B) {
		l := build(window.MaxPermitLimit)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if !l.TryAcquire(t0, 1).Granted {
					b.Error("refused")
					return
				}
			}
		})
	})
}

func BenchmarkFixedWindow(b *testing.B) {
	benchLimiter(b, func(limit int64) spi.Limiter { return window.NewFixed(limit, time.Hour, t0) })
}

func BenchmarkSlidingWindow(b *testing.B) {
	benchLimiter(b, func(limit int64) spi.Limiter { return window.NewSliding(limit, time.Hour, 10, t0) })
}

// TestImmediatePathAllocatesNothing checks every per-request operation of
// both kinds with testing.AllocsPerRun: grants, refusals (with barriers, so
// the hint walks them), grants that move to a new window or segment
// (skipping some), cancels and snapshots.
func TestImmediatePathAllocatesNothing(t *testing.T) {
	for _, k := range []struct {
		name  string
		build func(limit int64) spi.Limiter
	}{
		{"fixed", func(limit int64) spi.Limiter { return window.NewFixed(limit, time.Second, t0) }},
		{"sliding", func(limit int64) spi.Limiter { return window.NewSliding(limit, time.Second, 8, t0) }},
	} {
		t.Run(k.name, func(t *testing.T) {
			withBarrier := func(limit int64) spi.Limiter {
				l := k.build(limit)
				l.(spi.Inheritor).Inherit(t0, []spi.Usage{{Units: 1, Until: t0.Add(time.Hour)}, {Units: 1, Until: t0.Add(2 * time.Hour)}})
				return l
			}
			full := withBarrier(3)
			full.TryAcquire(t0, 1)
			now := t0
			moving := withBarrier(5)
			for _, tt := range []struct {
				name string
				f    func()
			}{
				{"grant and cancel", func() {
					l := full
					l.Cancel(t0, 1)
					decisionSink = l.TryAcquire(t0, 1)
				}},
				{"refusal with a hint", func() { decisionSink = full.TryAcquire(t0, 1) }},
				{"refusal never", func() { decisionSink = full.TryAcquire(t0, 4) }},
				{"grant in a later window or segment", func() {
					now = now.Add(3 * time.Second / 16)
					decisionSink = moving.TryAcquire(now, 1)
				}},
				{"long idle", func() {
					now = now.Add(time.Hour)
					decisionSink = moving.TryAcquire(now, 1)
				}},
				{"snapshot", func() { _ = full.Snapshot(t0) }},
			} {
				t.Run(tt.name, func(t *testing.T) {
					require.Zero(t, testing.AllocsPerRun(1000, tt.f))
				})
			}
			require.Equal(t, spi.Snapshot{Kind: full.Snapshot(t0).Kind, Limit: 3, InUse: 3, Available: 0}, full.Snapshot(t0))
		})
	}
}
