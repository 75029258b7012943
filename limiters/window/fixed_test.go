package window_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/limiters/window"
	"github.com/sluicerpc/sluice/spi"
)

const (
	ms = time.Millisecond
	s  = time.Second
)

func TestFixedCounting(t *testing.T) {
	tests := []struct {
		name   string
		limit  int64
		window time.Duration
		origin time.Duration
		steps  []step
	}{
		{"fills, then refuses until the window ends", 3, s, 0, []step{
			{0, 1, granted},
			{100 * ms, 2, granted},
			{200 * ms, 1, until(s)},
			{s - 1, 1, until(s)},
			{s, 3, granted},
			{1500 * ms, 1, until(2 * s)},
		}},
		{"a request larger than what is left waits, a smaller one passes", 5, s, 0, []step{
			{0, 3, granted},
			{0, 3, until(s)},
			{0, 2, granted},
			{0, 1, until(s)},
		}},
		{"the whole limit at once", 5, s, 0, []step{
			{0, 5, granted},
			{0, 1, until(s)},
			{s, 5, granted},
		}},
		{"more than the limit is never granted", 5, s, 0, []step{
			{0, 6, never},
			{0, math.MaxInt64, never},
			{0, 1 << 32, never},
			{0, 5, granted}, // nothing was consumed by the refusals
		}},
		{"zero units are granted even when full", 1, s, 0, []step{
			{0, 1, granted},
			{0, 0, granted},
			{0, 1, until(s)},
		}},
		{"the last nanosecond belongs to the window", 1, s, 0, []step{
			{s - 1, 1, granted},
			{s - 1, 1, until(s)},
			{s, 1, granted},
			{2*s - 1, 1, until(2 * s)},
		}},
		{"idle windows start empty", 2, s, 0, []step{
			{0, 2, granted},
			{10*s + 500*ms, 2, granted},
			{10*s + 700*ms, 1, until(11 * s)},
		}},
		{"windows are aligned to the origin", 2, s, 300 * ms, []step{
			{300 * ms, 2, granted},
			{1299 * ms, 1, until(1300 * ms)},
			{1300 * ms, 2, granted},
			{2299 * ms, 1, until(2300 * ms)},
		}},
		{"a caller behind the origin counts in the first window", 1, s, 300 * ms, []step{
			{100 * ms, 1, granted},
			{300 * ms, 1, until(1300 * ms)},
			{200 * ms, 1, until(1300 * ms)},
		}},
		{"a caller behind the current window counts in it", 2, s, 0, []step{
			{1500 * ms, 1, granted},
			{900 * ms, 1, granted}, // window 0 is over for the limiter: counted in window 1
			{1600 * ms, 1, until(2 * s)},
			{800 * ms, 1, until(2 * s)},
		}},
		{"microsecond windows", 1, time.Microsecond, 0, []step{
			{0, 1, granted},
			{999, 1, until(time.Microsecond)},
			{1000, 1, granted},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := window.NewFixed(tt.limit, tt.window, at(tt.origin))
			runSteps(t, l, tt.steps)
		})
	}
}

func TestFixedExactHints(t *testing.T) {
	t.Run("window end", func(t *testing.T) {
		l := window.NewFixed(4, s, at(0))
		take(t, l, 250*ms, 4)
		requireExactHint(t, l, 250*ms, 1, s)
		requireExactHint(t, l, s+1, 4, 2*s) // 1 unit taken at t=1s
	})
	t.Run("hint for a larger request is still the window end", func(t *testing.T) {
		l := window.NewFixed(4, s, at(0))
		take(t, l, 0, 3)
		requireExactHint(t, l, 10*ms, 2, s)
	})
	t.Run("barrier expiring inside a window", func(t *testing.T) {
		// 7 units inherited until t=2.5s in windows of 1s, limit 10.
		l := window.NewFixed(10, s, at(0))
		l.Inherit(at(0), []spi.Usage{usage(7, 2500*ms)})
		take(t, l, 2100*ms, 3)
		requireExactHint(t, l, 2100*ms, 1, 2500*ms) // the barrier goes before the window ends
		requireSnapshot(t, l, 2500*ms, window.FixedKindName, 10, 4, 6)
	})
	t.Run("barrier outliving the window", func(t *testing.T) {
		l := window.NewFixed(10, s, at(0))
		l.Inherit(at(0), []spi.Usage{usage(7, 2500*ms)})
		take(t, l, 2100*ms, 3)
		// 8 units need the window's 3 and the barrier's 7 both gone:
		// the window ends at 3s, after the barrier.
		requireExactHint(t, l, 2100*ms, 8, 3*s)
	})
	t.Run("several barriers, the first sufficient one", func(t *testing.T) {
		l := window.NewFixed(10, 10*s, at(0))
		l.Inherit(at(0), []spi.Usage{usage(2, 11*s), usage(3, 12*s), usage(4, 13*s)})
		// Horizon: the end of the window containing t=0, 10s.
		take(t, l, 0, 1)
		requireExactHint(t, l, 5*s, 5, 12*s) // at 10s: 9 in use; at 11s: 7; at 12s: 4
	})
}

func TestFixedCancel(t *testing.T) {
	t.Run("same instant restores the quota", func(t *testing.T) {
		l := window.NewFixed(3, s, at(0))
		take(t, l, 100*ms, 3)
		l.Cancel(at(100*ms), 2)
		requireSnapshot(t, l, 100*ms, window.FixedKindName, 3, 1, 2)
		take(t, l, 100*ms, 2)
		requireDecision(t, until(s), l.TryAcquire(at(100*ms), 1))
	})
	t.Run("never below zero", func(t *testing.T) {
		l := window.NewFixed(3, s, at(0))
		take(t, l, 100*ms, 2)
		l.Cancel(at(100*ms), 5)
		requireSnapshot(t, l, 100*ms, window.FixedKindName, 3, 0, 3)
		requireDecision(t, never, l.TryAcquire(at(100*ms), 4), "cancelling more does not raise the limit")
	})
	t.Run("later in the same window", func(t *testing.T) {
		l := window.NewFixed(3, s, at(0))
		take(t, l, 100*ms, 3)
		l.Cancel(at(900*ms), 1)
		requireSnapshot(t, l, 900*ms, window.FixedKindName, 3, 2, 1)
	})
	t.Run("after the window moved on it is ignored", func(t *testing.T) {
		l := window.NewFixed(3, s, at(0))
		take(t, l, 100*ms, 3)
		take(t, l, s, 1)
		l.Cancel(at(s+100*ms), 3) // cancels from window 1's single unit: never below zero
		requireSnapshot(t, l, s+100*ms, window.FixedKindName, 3, 0, 3)

		l = window.NewFixed(3, s, at(0))
		take(t, l, 100*ms, 3)
		l.Cancel(at(s), 3) // window 0's units are gone anyway; window 1 is empty
		requireSnapshot(t, l, s, window.FixedKindName, 3, 0, 3)
		take(t, l, s, 3)
		requireDecision(t, until(2*s), l.TryAcquire(at(s), 1))
	})
	t.Run("a caller behind the window is ignored", func(t *testing.T) {
		l := window.NewFixed(3, s, at(0))
		take(t, l, 1500*ms, 2)
		l.Cancel(at(900*ms), 2)
		requireSnapshot(t, l, 1500*ms, window.FixedKindName, 3, 2, 1)
	})
	t.Run("zero is a no-op, negative panics", func(t *testing.T) {
		l := window.NewFixed(3, s, at(0))
		take(t, l, 0, 1)
		l.Cancel(at(0), 0)
		requireSnapshot(t, l, 0, window.FixedKindName, 3, 1, 2)
		assert.Equal(t, "window: cancel of negative units -1", panicMessage(t, func() { l.Cancel(at(0), -1) }))
		requireSnapshot(t, l, 0, window.FixedKindName, 3, 1, 2)
	})
}

func TestFixedNegativeAcquirePanics(t *testing.T) {
	l := window.NewFixed(3, s, at(0))
	assert.Equal(t, "window: acquire of negative units -2", panicMessage(t, func() { l.TryAcquire(at(0), -2) }))
	requireSnapshot(t, l, 0, window.FixedKindName, 3, 0, 3)
}

func TestFixedReleaseIsANoOp(t *testing.T) {
	l := window.NewFixed(3, s, at(0))
	take(t, l, 0, 3)
	l.Release(at(0), 3)
	l.Release(at(0), -3)
	requireSnapshot(t, l, 0, window.FixedKindName, 3, 3, 0)
}

func TestFixedSnapshot(t *testing.T) {
	l := window.NewFixed(5, s, at(0))
	requireSnapshot(t, l, 0, window.FixedKindName, 5, 0, 5)
	take(t, l, 200*ms, 3)
	requireSnapshot(t, l, 200*ms, window.FixedKindName, 5, 3, 2)
	requireSnapshot(t, l, s-1, window.FixedKindName, 5, 3, 2)
	requireSnapshot(t, l, s, window.FixedKindName, 5, 0, 5)
	// Snapshot does not move the window: a grant behind it still counts
	// in window 0.
	take(t, l, 500*ms, 2)
	requireSnapshot(t, l, 500*ms, window.FixedKindName, 5, 5, 0)

	// Available is exactly what TryAcquire grants.
	l = window.NewFixed(5, s, at(0))
	take(t, l, 0, 2)
	snap := l.Snapshot(at(0))
	requireDecision(t, granted, l.TryAcquire(at(0), snap.Available))
	requireDecision(t, until(s), l.TryAcquire(at(0), 1))
}

// TestFixedLongIdle checks that the 32-bit window index stored in the
// state word is never mistaken for the current window after it wraps.
func TestFixedLongIdle(t *testing.T) {
	const w = time.Microsecond
	for _, idle := range []time.Duration{
		(1 << 32) * w,     // exactly 2^32 windows: same low 32 bits
		(1<<32 - 1) * w,   // one window short: looks like a caller one window behind
		(1<<32+1)*w + 500, // just after
		(1 << 31) * w,     // half way
		(3<<32)*w + 999,   // several wraps, last nanosecond of the window
		(1 << 40) * w,     // far
		(1 << 62) + 123,   // very far
	} {
		l := window.NewFixed(2, w, at(0))
		take(t, l, 0, 2)
		take(t, l, idle, 2)
		end := idle - idle%w + w
		requireDecision(t, spi.RefuseUntil(at(end)), l.TryAcquire(at(idle), 1), "idle %v", idle)
	}
}

func TestFixedHugeWindow(t *testing.T) {
	l := window.NewFixed(1, math.MaxInt64, at(0))
	take(t, l, 0, 1)
	d := l.TryAcquire(at(100*365*24*time.Hour), 1)
	require.Equal(t, spi.HintAt, d.Hint)
	assert.True(t, d.RetryAt.Equal(at(math.MaxInt64)), "the window ends 292 years after the origin")
}
