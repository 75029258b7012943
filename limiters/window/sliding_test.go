package window_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/sluicerpc/sluice/limiters/window"
	"github.com/sluicerpc/sluice/spi"
)

func TestSlidingCounting(t *testing.T) {
	tests := []struct {
		name     string
		limit    int64
		window   time.Duration
		segments int64
		origin   time.Duration
		steps    []step
	}{
		{"the current segment and the three before it", 4, s, 4, 0, []step{
			{0, 2, granted},         // segment [0, 250ms): counts until 1s
			{300 * ms, 2, granted},  // segment [250ms, 500ms): until 1.25s
			{500 * ms, 1, until(s)}, // segment 0 leaves first
			{500 * ms, 3, until(1250 * ms)},
			{s - 1, 1, until(s)},
			{s, 2, granted},          // segment 4 covers 1..4
			{s, 1, until(1250 * ms)}, // segment 1 leaves next
			{1250 * ms, 2, granted},  // 2 (segment 4) + 2
			{1250 * ms, 1, until(2 * s)},
		}},
		{"a unit taken late in a segment counts until the segment's start plus the window", 1, s, 4, 0, []step{
			{250*ms - 1, 1, granted},
			{s - 1, 1, until(s)},
			{s, 1, granted},
		}},
		{"a unit taken at a segment's start", 1, s, 4, 0, []step{
			{250 * ms, 1, granted},
			{1250*ms - 1, 1, until(1250 * ms)},
			{1250 * ms, 1, granted},
		}},
		{"the window is the segments, not any span of the window's length", 1, s, 2, 0, []step{
			{900 * ms, 1, granted}, // segment [500ms, 1s)
			{1499 * ms, 1, until(1500 * ms)},
			{1500 * ms, 1, granted}, // only 600ms later
		}},
		{"a request larger than what is left waits until enough segments leave", 6, 1200 * ms, 3, 0, []step{
			{0, 1, granted},        // segment [0, 400ms): until 1.2s
			{400 * ms, 2, granted}, // until 1.6s
			{800 * ms, 3, granted}, // until 2s
			{900 * ms, 1, until(1200 * ms)},
			{900 * ms, 3, until(1600 * ms)},
			{900 * ms, 6, until(2 * s)},
		}},
		{"more than the limit is never granted", 5, s, 5, 0, []step{
			{0, 6, never},
			{0, math.MaxInt64, never},
			{0, 5, granted},
		}},
		{"zero units are granted even when full", 1, s, 2, 0, []step{
			{0, 1, granted},
			{0, 0, granted},
			{0, 1, until(s)},
		}},
		{"idle segments are empty", 2, s, 4, 0, []step{
			{0, 2, granted},
			{10*s + 100*ms, 2, granted},
			{10*s + 300*ms, 1, until(11 * s)},
		}},
		{"segments are aligned to the origin", 2, s, 2, 300 * ms, []step{
			{300 * ms, 1, granted}, // segment [300ms, 800ms)
			{900 * ms, 1, granted}, // segment [800ms, 1.3s)
			{1200 * ms, 1, until(1300 * ms)},
			{1300 * ms, 1, granted},
		}},
		{"a caller behind the open segment counts in it", 2, s, 4, 0, []step{
			{600 * ms, 1, granted}, // segment 2, until 1.5s
			{100 * ms, 1, granted}, // behind: counted in segment 2 too
			{1499 * ms, 1, until(1500 * ms)},
			{200 * ms, 1, until(1500 * ms)},
		}},
		{"a caller behind the origin counts in the first segment", 1, s, 4, 300 * ms, []step{
			{100 * ms, 1, granted},
			{300 * ms, 1, until(1300 * ms)},
		}},
		{"1ns segments", 2, time.Microsecond, 1000, 0, []step{
			{0, 1, granted},
			{999, 1, granted},
			{999, 1, until(1000)},
			{1000, 1, granted},
			{1000, 1, until(1999)},
		}},
		{"three segments in a ring of four", 3, 3 * time.Microsecond, 3, 0, []step{
			{0, 1, granted},    // segment 0, until 3us
			{1000, 1, granted}, // segment 1, until 4us
			{2000, 1, granted}, // segment 2, until 5us
			{2999, 1, until(3000)},
			{3000, 1, granted}, // segment 3 (slot 3)
			{4000, 1, granted}, // segment 4 (slot 0)
			{4500, 1, until(5000)},
			{5000, 1, granted}, // segment 5 (slot 1)
			{5000, 1, until(6000)},
			{9000, 3, granted}, // segments 6..8 skipped
			{11999, 1, until(12000)},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := window.NewSliding(tt.limit, tt.window, tt.segments, at(tt.origin))
			runSteps(t, l, tt.steps)
		})
	}
}

func TestSlidingExactHints(t *testing.T) {
	t.Run("segments leave one by one", func(t *testing.T) {
		l := window.NewSliding(4, s, 4, at(0))
		take(t, l, 0, 1)
		take(t, l, 250*ms, 1)
		take(t, l, 500*ms, 1)
		take(t, l, 750*ms, 1)
		requireExactHint(t, l, 900*ms, 1, s)  // segment 0 leaves; take 1 at 1s
		requireExactHint(t, l, s, 2, 1500*ms) // needs segments 1 and 2 gone
		// 750ms's unit leaves at 1.75s, 1s's at 2s, 1.5s's two at 2.5s.
		requireExactHint(t, l, 1600*ms, 3, 2500*ms)
		requireSnapshot(t, l, 2500*ms, window.SlidingKindName, 4, 3, 1)
	})
	t.Run("barriers and segments interleaved", func(t *testing.T) {
		l := window.NewSliding(10, s, 4, at(0))
		l.Inherit(at(0), []spi.Usage{usage(3, 1100*ms), usage(2, 1400*ms)})
		// horizon of t=0: segment [0, 250ms) + 1s = 1.25s; so 3 until
		// 1.25s and 2 until 1.4s.
		take(t, l, 100*ms, 2) // until 1s
		take(t, l, 300*ms, 3) // until 1.25s
		requireSnapshot(t, l, 300*ms, window.SlidingKindName, 10, 10, 0)
		requireExactHint(t, l, 300*ms, 2, s)        // 2 leave at 1s
		requireExactHint(t, l, s, 5, 1250*ms)       // 1.25s: 3+3 leave, 4 in use
		requireExactHint(t, l, 1250*ms, 3, 1400*ms) // 1.4s: the last barrier leaves
		requireSnapshot(t, l, 1400*ms, window.SlidingKindName, 10, 2+5+3, 0)
	})
	t.Run("the hint is the window end for the whole limit", func(t *testing.T) {
		l := window.NewSliding(3, 3*s, 3, at(0))
		take(t, l, 0, 1)
		take(t, l, s, 1)
		take(t, l, 2*s, 1)
		requireExactHint(t, l, 2500*ms, 3, 5*s)
	})
}

func TestSlidingCancel(t *testing.T) {
	t.Run("same instant restores the quota", func(t *testing.T) {
		l := window.NewSliding(3, s, 4, at(0))
		take(t, l, 100*ms, 3)
		l.Cancel(at(100*ms), 2)
		requireSnapshot(t, l, 100*ms, window.SlidingKindName, 3, 1, 2)
		take(t, l, 100*ms, 2)
		requireDecision(t, until(s), l.TryAcquire(at(100*ms), 1))
	})
	t.Run("never below zero, and only the current segment", func(t *testing.T) {
		l := window.NewSliding(5, s, 4, at(0))
		take(t, l, 0, 2)
		take(t, l, 300*ms, 1)
		l.Cancel(at(300*ms), 5) // only segment 1's unit
		requireSnapshot(t, l, 300*ms, window.SlidingKindName, 5, 2, 3)
	})
	t.Run("after the segment moved on it is ignored", func(t *testing.T) {
		l := window.NewSliding(3, s, 4, at(0))
		take(t, l, 100*ms, 3)
		l.Cancel(at(300*ms), 3)
		requireSnapshot(t, l, 300*ms, window.SlidingKindName, 3, 3, 0)
	})
	t.Run("a caller behind the segment is ignored", func(t *testing.T) {
		l := window.NewSliding(3, s, 4, at(0))
		take(t, l, 600*ms, 2)
		l.Cancel(at(100*ms), 2)
		requireSnapshot(t, l, 600*ms, window.SlidingKindName, 3, 2, 1)
	})
	t.Run("zero is a no-op, negative panics", func(t *testing.T) {
		l := window.NewSliding(3, s, 2, at(0))
		take(t, l, 0, 1)
		l.Cancel(at(0), 0)
		assert.Equal(t, "window: cancel of negative units -1", panicMessage(t, func() { l.Cancel(at(0), -1) }))
		requireSnapshot(t, l, 0, window.SlidingKindName, 3, 1, 2)
	})
}

func TestSlidingNegativeAcquirePanics(t *testing.T) {
	l := window.NewSliding(3, s, 2, at(0))
	assert.Equal(t, "window: acquire of negative units -1", panicMessage(t, func() { l.TryAcquire(at(0), -1) }))
	requireSnapshot(t, l, 0, window.SlidingKindName, 3, 0, 3)
}

func TestSlidingReleaseIsANoOp(t *testing.T) {
	l := window.NewSliding(3, s, 2, at(0))
	take(t, l, 0, 3)
	l.Release(at(0), 3)
	requireSnapshot(t, l, 0, window.SlidingKindName, 3, 3, 0)
}

func TestSlidingSnapshot(t *testing.T) {
	l := window.NewSliding(5, s, 4, at(0))
	requireSnapshot(t, l, 0, window.SlidingKindName, 5, 0, 5)
	take(t, l, 100*ms, 2)
	take(t, l, 600*ms, 1)
	requireSnapshot(t, l, 600*ms, window.SlidingKindName, 5, 3, 2)
	requireSnapshot(t, l, s-1, window.SlidingKindName, 5, 3, 2)
	requireSnapshot(t, l, s, window.SlidingKindName, 5, 1, 4)
	requireSnapshot(t, l, 1500*ms-1, window.SlidingKindName, 5, 1, 4)
	requireSnapshot(t, l, 1500*ms, window.SlidingKindName, 5, 0, 5)
	requireSnapshot(t, l, 100*s, window.SlidingKindName, 5, 0, 5)
	// Snapshot does not move the window.
	take(t, l, 700*ms, 2)
	requireSnapshot(t, l, 700*ms, window.SlidingKindName, 5, 5, 0)
}

// TestSlidingLongIdle checks that segment stamps (the low 32 bits of the
// segment number) are never mistaken for the current segments after they
// wrap: with 1ns segments they wrap every 4.3 seconds.
func TestSlidingLongIdle(t *testing.T) {
	for _, idle := range []time.Duration{
		1 << 32, (1 << 32) + 1, (1 << 32) - 1, (1 << 32) + 999, (1 << 32) + 1000,
		3<<32 + 500, 1 << 31, 1 << 40, 1 << 61,
	} {
		l := window.NewSliding(2, time.Microsecond, 1000, at(0))
		take(t, l, 0, 1)
		take(t, l, 1, 1)
		take(t, l, idle, 2)
		requireDecision(t, spi.RefuseUntil(at(idle+1000)), l.TryAcquire(at(idle), 1), "idle %v", idle)
		requireSnapshot(t, l, idle, window.SlidingKindName, 2, 2, 0)
	}
}
