package window_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/limiters/window"
	"github.com/sluicerpc/sluice/spi"
)

// handover is the kernel's algorithm replacement: seal from, build to at
// now and let it inherit.
func handover(t *testing.T, from spi.Limiter, now time.Duration, to spi.Spec) spi.Limiter {
	t.Helper()
	k, err := spi.DefaultRegistry.Validate(to)
	require.NoError(t, err)
	l, err := k.New(to.Params, at(now))
	require.NoError(t, err)
	l.(spi.Inheritor).Inherit(at(now), from.(spi.Handover).Seal(at(now)))
	return l
}

// requireSealed checks that a sealed limiter refuses everything, ignores
// Cancel, Inherit and Reconfigure, and still reports its usage.
func requireSealed(t *testing.T, l spi.Limiter, now time.Duration, kind string, limit, inUse int64) {
	t.Helper()
	requireSnapshot(t, l, now, kind, limit, inUse, 0)
	requireDecision(t, never, l.TryAcquire(at(now), 1))
	requireDecision(t, granted, l.TryAcquire(at(now), 0))
	l.Cancel(at(now), inUse+1)
	l.(spi.Inheritor).Inherit(at(now), []spi.Usage{usage(100, now+time.Hour)})
	p := window.SlidingSpec(100, s, 2).Params
	if kind == window.FixedKindName {
		p = window.FixedSpec(100, s).Params
	}
	require.ErrorIs(t, l.Reconfigure(at(now), p), window.ErrSealed)
	requireSnapshot(t, l, now, kind, limit, inUse, 0)
}

func TestFixedSeal(t *testing.T) {
	l := fixed7(t)
	l.Inherit(at(400*ms), []spi.Usage{usage(2, 3*s)})
	requireUsage(t, []spi.Usage{usage(7, s), usage(2, 3*s)}, l.Seal(at(500*ms)))

	requireSnapshot(t, l, 500*ms, window.FixedKindName, 10, 9, 0)
	requireDecision(t, never, l.TryAcquire(at(500*ms), 1))
	requireDecision(t, granted, l.TryAcquire(at(500*ms), 0))
	l.Cancel(at(500*ms), 7) // the units were handed over
	l.Inherit(at(500*ms), []spi.Usage{usage(100, time.Hour)})
	require.ErrorIs(t, l.Reconfigure(at(500*ms), window.FixedSpec(100, s).Params), window.ErrSealed)
	requireSnapshot(t, l, 500*ms, window.FixedKindName, 10, 9, 0)

	// The sealed usage expires as it would have.
	requireSnapshot(t, l, s, window.FixedKindName, 10, 2, 0)
	requireDecision(t, never, l.TryAcquire(at(5*s), 1))
	requireSnapshot(t, l, 3*s, window.FixedKindName, 10, 0, 0)

	// A second Seal reports what still counts at its instant.
	requireUsage(t, []spi.Usage{usage(2, 3*s)}, l.Seal(at(2*s)))
}

func TestFixedSealUsage(t *testing.T) {
	t.Run("empty", func(t *testing.T) {
		l := window.NewFixed(5, s, at(0))
		require.Empty(t, l.Seal(at(0)))
	})
	t.Run("after the window ended", func(t *testing.T) {
		l := fixed7(t)
		require.Empty(t, l.Seal(at(s)))
	})
	t.Run("ordered by until, the window first on a tie", func(t *testing.T) {
		l := window.NewFixed(10, s, at(0))
		l.Inherit(at(0), []spi.Usage{usage(2, 3*s), usage(5, 500*ms)}) // 5 until max(0.5s, 1s)
		take(t, l, 200*ms, 1)
		requireUsage(t, []spi.Usage{usage(1, s), usage(5, s), usage(2, 3*s)}, l.Seal(at(400*ms)))
	})
	t.Run("expired barriers are not reported", func(t *testing.T) {
		l := window.NewFixed(10, s, at(0))
		l.Inherit(at(0), []spi.Usage{usage(2, 3*s), usage(5, 2*s)})
		requireUsage(t, []spi.Usage{usage(2, 3*s)}, l.Seal(at(2*s)))
	})
	t.Run("a window change's barrier", func(t *testing.T) {
		l := fixed7(t)
		reconfigure(t, l, 400*ms, window.FixedSpec(10, 2*s))
		take(t, l, 500*ms, 1)
		requireUsage(t, []spi.Usage{usage(1, 2400*ms), usage(7, 2400*ms)}, l.Seal(at(600*ms)))
	})
}

func TestSlidingSeal(t *testing.T) {
	l := sliding9(t)
	requireUsage(t, []spi.Usage{usage(3, s), usage(4, 1250*ms), usage(2, 1500*ms)}, l.Seal(at(700*ms)))

	requireSnapshot(t, l, 700*ms, window.SlidingKindName, 10, 9, 0)
	requireDecision(t, never, l.TryAcquire(at(700*ms), 1))
	requireDecision(t, granted, l.TryAcquire(at(700*ms), 0))
	l.Cancel(at(700*ms), 2)
	l.Inherit(at(700*ms), []spi.Usage{usage(100, time.Hour)})
	require.ErrorIs(t, l.Reconfigure(at(700*ms), window.SlidingSpec(100, s, 4).Params), window.ErrSealed)
	requireSnapshot(t, l, 700*ms, window.SlidingKindName, 10, 9, 0)

	requireSnapshot(t, l, s, window.SlidingKindName, 10, 6, 0)
	requireSnapshot(t, l, 1250*ms, window.SlidingKindName, 10, 2, 0)
	requireUsage(t, []spi.Usage{usage(4, 1250*ms), usage(2, 1500*ms)}, l.Seal(at(1100*ms)))
	requireSnapshot(t, l, 1500*ms, window.SlidingKindName, 10, 0, 0)
}

func TestSlidingSealUsage(t *testing.T) {
	t.Run("empty", func(t *testing.T) {
		l := window.NewSliding(5, s, 2, at(0))
		require.Empty(t, l.Seal(at(0)))
	})
	t.Run("segments that stopped counting are not reported", func(t *testing.T) {
		l := sliding9(t)
		requireUsage(t, []spi.Usage{usage(2, 1500*ms)}, l.Seal(at(1300*ms)))
	})
	t.Run("in a segment after the last grant", func(t *testing.T) {
		l := window.NewSliding(5, s, 4, at(0))
		take(t, l, 0, 1)
		take(t, l, 300*ms, 2)
		requireUsage(t, []spi.Usage{usage(1, s), usage(2, 1250*ms)}, l.Seal(at(900*ms)))
	})
	t.Run("segments and barriers", func(t *testing.T) {
		l := window.NewSliding(10, s, 4, at(0))
		l.Inherit(at(0), []spi.Usage{usage(5, 1100*ms), usage(1, 900*ms)}) // horizon: 0 + 1s
		take(t, l, 100*ms, 1)
		take(t, l, 300*ms, 2)
		requireUsage(t, []spi.Usage{usage(1, s), usage(1, s), usage(5, 1100*ms), usage(2, 1250*ms)}, l.Seal(at(400*ms)))
	})
}

func TestFixedInherit(t *testing.T) {
	for _, tt := range []struct {
		name  string
		until time.Duration
		want  time.Duration
	}{
		{"expiring before the window's end: kept until the end", 600 * ms, s},
		{"expiring after: kept until its own expiry", 1700 * ms, 1700 * ms},
		{"already expired: counts as if consumed now", 100 * ms, s},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l := window.NewFixed(10, s, at(0))
			l.Inherit(at(400*ms), []spi.Usage{usage(7, tt.until)})
			requireSnapshot(t, l, 400*ms, window.FixedKindName, 10, 7, 3)
			take(t, l, 400*ms, 3)
			requireExactHint(t, l, 500*ms, 1, s) // the window's 3 leave at 1s
			if tt.want > s {
				requireExactHint(t, l, s, 3, tt.want)
			} else {
				requireSnapshot(t, l, s, window.FixedKindName, 10, 1, 9)
			}
		})
	}
}

func TestSlidingInherit(t *testing.T) {
	for _, tt := range []struct {
		name  string
		until time.Duration
		want  time.Duration
	}{
		// The horizon at 0.4s: segment [0.25s, 0.5s) + 1s = 1.25s.
		{"expiring before the horizon: kept until the horizon", 600 * ms, 1250 * ms},
		{"expiring after: kept until its own expiry", 1700 * ms, 1700 * ms},
		{"already expired: counts as if consumed now", 100 * ms, 1250 * ms},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l := window.NewSliding(10, s, 4, at(0))
			l.Inherit(at(400*ms), []spi.Usage{usage(7, tt.until)})
			requireSnapshot(t, l, 400*ms, window.SlidingKindName, 10, 7, 3)
			requireExactHint(t, l, 400*ms, 4, tt.want)
		})
	}
}

func TestInheritIgnoresEmptyEntries(t *testing.T) {
	for _, l := range []interface {
		spi.Limiter
		spi.Inheritor
	}{window.NewFixed(10, s, at(0)), window.NewSliding(10, s, 2, at(0))} {
		l.Inherit(at(0), nil)
		l.Inherit(at(0), []spi.Usage{})
		l.Inherit(at(0), []spi.Usage{usage(0, time.Hour), usage(-5, time.Hour)})
		assert.Equal(t, int64(10), l.Snapshot(at(0)).Available)
		assert.Empty(t, l.(spi.Handover).Seal(at(0)))
	}
}

// TestReplacementKeepsUsage is docs/admission.md's example: a token bucket
// of 10 with 7 used (refilled in 0.7s at 10/s), replaced by a sliding window
// of 10 per second: the 7 units are a barrier for at least the sliding
// window's horizon, and 3 units are available at once.
func TestReplacementKeepsUsage(t *testing.T) {
	l := window.NewSliding(10, s, 10, at(0))
	l.Inherit(at(0), []spi.Usage{usage(7, 700*ms)})
	take(t, l, 0, 3)
	requireExactHint(t, l, 0, 1, s)
}

// TestHandoverChain replaces fixed -> sliding -> fixed -> sliding and
// follows the usage through every step.
func TestHandoverChain(t *testing.T) {
	a := window.NewFixed(10, s, at(0))
	take(t, a, 400*ms, 7)

	// Sliding 10 per 2s in 4 segments, from 0.4s: the 7 count until
	// max(1s, 0.4s+2s).
	b := handover(t, a, 400*ms, window.SlidingSpec(10, 2*s, 4))
	requireSealed(t, a, 400*ms, window.FixedKindName, 10, 7)
	requireSnapshot(t, b, 400*ms, window.SlidingKindName, 10, 7, 3)
	take(t, b, 500*ms, 2)  // segment [0.4s, 0.9s): until 2.4s
	take(t, b, 1000*ms, 1) // segment [0.9s, 1.4s): until 2.9s
	requireExactHint(t, b, 1100*ms, 1, 2400*ms)
	// (that unit is in segment [2.4s, 2.9s): until 4.4s)

	// Fixed 10 per 5s from 2.5s: everything counts until at least 7.5s.
	c := handover(t, b, 2500*ms, window.FixedSpec(10, 5*s))
	requireSealed(t, b, 2500*ms, window.SlidingKindName, 10, 2)
	requireSnapshot(t, c, 2500*ms, window.FixedKindName, 10, 2, 8)
	take(t, c, 2500*ms, 8)
	requireExactHint(t, c, 3*s, 1, 7500*ms)

	// Sliding 20 per 100ms in 2 segments, from 7.6s: the unit of the
	// fixed window [7.5s, 12.5s) counts until its end.
	d := handover(t, c, 7600*ms, window.SlidingSpec(20, 100*ms, 2))
	requireSnapshot(t, d, 7600*ms, window.SlidingKindName, 20, 1, 19)
	take(t, d, 7600*ms, 19)
	requireExactHint(t, d, 7600*ms, 1, 7700*ms)
	requireExactHint(t, d, 7700*ms, 19, 7800*ms)
	requireExactHint(t, d, 7900*ms, 20, 12500*ms)
}

// TestHandoverTwoHops checks a chain in which usage outlives the successor's
// horizon twice: it keeps its original expiry.
func TestHandoverTwoHops(t *testing.T) {
	a := window.NewSliding(5, 10*s, 2, at(0))
	take(t, a, 0, 5) // until 10s
	b := handover(t, a, s, window.FixedSpec(5, 100*ms))
	c := handover(t, b, 2*s, window.SlidingSpec(5, 100*ms, 2))
	requireUsage(t, []spi.Usage{usage(5, 10*s)}, c.(spi.Handover).Seal(at(3*s)))
	d := handover(t, c, 3*s, window.FixedSpec(5, 100*ms))
	requireExactHint(t, d, 3*s, 1, 10*s)
}

// TestSealThenInheritKeepsInUse checks that a replacement at one instant
// never lowers the usage in force.
func TestSealThenInheritKeepsInUse(t *testing.T) {
	for _, from := range []func(*testing.T) spi.Limiter{
		func(t *testing.T) spi.Limiter { return fixed7(t) },
		func(t *testing.T) spi.Limiter { return sliding9(t) },
	} {
		for _, to := range []spi.Spec{
			window.FixedSpec(10, s), window.FixedSpec(10, 10*s), window.FixedSpec(3, 100*ms),
			window.SlidingSpec(10, s, 4), window.SlidingSpec(10, 10*s, 2), window.SlidingSpec(3, 100*ms, 5),
		} {
			l := from(t)
			before := l.Snapshot(at(700 * ms)).InUse
			next := handover(t, l, 700*ms, to)
			assert.Equal(t, before, next.Snapshot(at(700*ms)).InUse, "%v", to)
		}
	}
}
