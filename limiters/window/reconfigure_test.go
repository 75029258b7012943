package window_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/limiters/window"
	"github.com/sluicerpc/sluice/spi"
)

func reconfigure(t *testing.T, l spi.Limiter, now time.Duration, spec spi.Spec) {
	t.Helper()
	require.NoError(t, l.Reconfigure(at(now), spec.Params), "Reconfigure(t0+%v, %v)", now, spec)
}

// fixed7 is a fixed window of 10 per second with 7 units used at t=0.4s.
func fixed7(t *testing.T) *window.Fixed {
	l := window.NewFixed(10, s, at(0))
	take(t, l, 100*ms, 3)
	take(t, l, 400*ms, 4)
	requireSnapshot(t, l, 400*ms, window.FixedKindName, 10, 7, 3)
	return l
}

func TestFixedReconfigureLimit(t *testing.T) {
	t.Run("lowered below the count: nothing until the window ends", func(t *testing.T) {
		l := fixed7(t)
		reconfigure(t, l, 400*ms, window.FixedSpec(5, s))
		requireSnapshot(t, l, 400*ms, window.FixedKindName, 5, 7, 0)
		requireExactHint(t, l, 400*ms, 1, s) // and 1 unit taken at 1s
		take(t, l, s, 4)
		requireDecision(t, until(2*s), l.TryAcquire(at(s), 1))
		requireDecision(t, never, l.TryAcquire(at(s), 6))
	})
	t.Run("raised: exactly the difference until the window ends", func(t *testing.T) {
		l := fixed7(t)
		reconfigure(t, l, 400*ms, window.FixedSpec(20, s))
		requireSnapshot(t, l, 400*ms, window.FixedKindName, 20, 7, 13)
		take(t, l, 500*ms, 13)
		requireExactHint(t, l, 900*ms, 1, s)
		requireSnapshot(t, l, s, window.FixedKindName, 20, 1, 19)
	})
	t.Run("does not open a new window", func(t *testing.T) {
		l := fixed7(t)
		reconfigure(t, l, 400*ms, window.FixedSpec(7, s))
		requireExactHint(t, l, 999*ms, 1, s)
		reconfigure(t, l, s+300*ms, window.FixedSpec(9, s)) // in window 1: still aligned to t=0
		take(t, l, s+300*ms, 8)
		requireExactHint(t, l, s+400*ms, 1, 2*s)
	})
	t.Run("same parameters change nothing", func(t *testing.T) {
		l := fixed7(t)
		reconfigure(t, l, 400*ms, window.FixedSpec(10, s))
		requireSnapshot(t, l, 400*ms, window.FixedKindName, 10, 7, 3)
		take(t, l, 400*ms, 3)
		requireExactHint(t, l, 400*ms, 1, s)
	})
}

func TestFixedReconfigureWindow(t *testing.T) {
	t.Run("1s to 10s: the 7 units are a barrier until 10.4s", func(t *testing.T) {
		l := fixed7(t)
		reconfigure(t, l, 400*ms, window.FixedSpec(10, 10*s))
		requireSnapshot(t, l, 400*ms, window.FixedKindName, 10, 7, 3)
		take(t, l, 500*ms, 3)
		requireSnapshot(t, l, s, window.FixedKindName, 10, 10, 0) // the old window's end frees nothing
		requireExactHint(t, l, s, 1, 10400*ms)
		requireSnapshot(t, l, 10400*ms, window.FixedKindName, 10, 1, 9) // new window [10.4s, 20.4s)
	})
	t.Run("10s to 1s: the barrier lasts until the old window's end", func(t *testing.T) {
		l := window.NewFixed(10, 10*s, at(0))
		take(t, l, 400*ms, 7)
		reconfigure(t, l, 400*ms, window.FixedSpec(10, s))
		// Barrier 7 until max(10s, 0.4s+1s) = 10s; windows of 1s from 0.4s,
		// 3 units each.
		take(t, l, 400*ms, 3)
		requireExactHint(t, l, 900*ms, 1, 1400*ms)
		take(t, l, 9400*ms, 3)
		requireExactHint(t, l, 9500*ms, 1, 10*s) // the barrier ends inside [9.4s, 10.4s)
		take(t, l, 10*s, 6)
		requireExactHint(t, l, 10*s, 1, 10400*ms)
	})
	t.Run("limit and window together", func(t *testing.T) {
		l := fixed7(t)
		reconfigure(t, l, 400*ms, window.FixedSpec(20, 2*s))
		requireSnapshot(t, l, 400*ms, window.FixedKindName, 20, 7, 13) // barrier until max(1s, 2.4s)
		take(t, l, 400*ms, 13)
		requireExactHint(t, l, 2*s, 1, 2400*ms)
		requireSnapshot(t, l, 2400*ms, window.FixedKindName, 20, 1, 19)
	})
	t.Run("after the window ended nothing is carried", func(t *testing.T) {
		l := fixed7(t)
		reconfigure(t, l, 1200*ms, window.FixedSpec(10, 10*s))
		requireSnapshot(t, l, 1200*ms, window.FixedKindName, 10, 0, 10)
	})
	t.Run("only the current window's count is carried", func(t *testing.T) {
		l := fixed7(t)
		take(t, l, 1100*ms, 2)
		reconfigure(t, l, 1500*ms, window.FixedSpec(10, 200*ms))
		// Barrier 2 until max(2s, 1.7s) = 2s; windows of 200ms from 1.5s.
		take(t, l, 1500*ms, 8)
		requireExactHint(t, l, 1600*ms, 1, 1700*ms)
		take(t, l, 1900*ms, 8)
		requireExactHint(t, l, 1950*ms, 2, 2*s)
	})
	t.Run("the new windows start at the publication", func(t *testing.T) {
		l := window.NewFixed(1, s, at(0))
		reconfigure(t, l, 250*ms, window.FixedSpec(1, 2*s))
		take(t, l, 300*ms, 1)
		requireExactHint(t, l, 300*ms, 1, 2250*ms)
		requireExactHint(t, l, 3*s, 1, 4250*ms)
	})
	t.Run("twice at the same instant: as strict as once to the final window", func(t *testing.T) {
		l := fixed7(t)
		reconfigure(t, l, 400*ms, window.FixedSpec(10, 2*s))
		take(t, l, 400*ms, 2)
		reconfigure(t, l, 400*ms, window.FixedSpec(10, 3*s))
		// 7 until 2.4s, then kept until 0.4s + 3s like the 2 units of the
		// second change: max(2.4s, 3.4s).
		requireSnapshot(t, l, 400*ms, window.FixedKindName, 10, 9, 1)
		requireSnapshot(t, l, 2400*ms, window.FixedKindName, 10, 9, 1)
		requireSnapshot(t, l, 3400*ms, window.FixedKindName, 10, 0, 10)
	})
	t.Run("a barrier is never shortened by a shorter window", func(t *testing.T) {
		l := fixed7(t)
		reconfigure(t, l, 400*ms, window.FixedSpec(10, 10*s))
		reconfigure(t, l, 500*ms, window.FixedSpec(10, s))
		requireSnapshot(t, l, 10*s, window.FixedKindName, 10, 7, 3) // until 10.4s still
		requireSnapshot(t, l, 10400*ms, window.FixedKindName, 10, 0, 10)
	})
}

// TestWindowChangeAfterReplacement is the regression for usage inherited
// under one window and carried over a change to a longer one: it must be
// kept as long as if it had been handed to the longer window directly, and
// at least one new window from the change (barriers are remapped).
func TestWindowChangeAfterReplacement(t *testing.T) {
	fixedFull := func(t *testing.T) spi.Limiter { l := window.NewFixed(1, 1000, at(0)); take(t, l, 0, 1); return l }
	slidingFull := func(t *testing.T) spi.Limiter { l := window.NewSliding(1, 1000, 2, at(0)); take(t, l, 0, 1); return l }
	for _, tt := range []struct {
		name          string
		predecessor   func(*testing.T) spi.Limiter
		first, final  spi.Spec
		reconfigureAt time.Duration
		want          time.Duration // when the inherited unit stops counting
	}{
		{"fixed -> sliding 1us -> sliding 1.2us", fixedFull, window.SlidingSpec(1, 1000, 2), window.SlidingSpec(1, 1200, 2), 0, 1200},
		{"sliding -> fixed 1us -> fixed 1.5us, later", slidingFull, window.FixedSpec(1, 1000), window.FixedSpec(1, 1500), 300, 1500},
		{"fixed -> fixed 1us -> fixed 3us, later", fixedFull, window.FixedSpec(1, 1000), window.FixedSpec(1, 3000), 500, 3000},
		{"sliding -> sliding 1us -> sliding 2us in 4, later", slidingFull, window.SlidingSpec(1, 1000, 2), window.SlidingSpec(1, 2000, 4), 700, 2000},
	} {
		t.Run(tt.name, func(t *testing.T) {
			direct := handover(t, tt.predecessor(t), 0, tt.final)
			requireExactHint(t, direct, 0, 1, tt.want)

			// Two hops keep it at least as long, and at least one final
			// window from the second publication: the barrier is part of
			// the state the final configuration starts from.
			twoHops := handover(t, tt.predecessor(t), 0, tt.first)
			reconfigure(t, twoHops, tt.reconfigureAt, tt.final)
			finalWindow := time.Duration(tt.final.Params[window.ParamWindow])
			requireExactHint(t, twoHops, tt.reconfigureAt, 1, max(tt.want, tt.reconfigureAt+finalWindow))
		})
	}
}

func TestFixedReconfigureKeepsBarriers(t *testing.T) {
	l := window.NewFixed(10, s, at(0))
	l.Inherit(at(0), []spi.Usage{usage(4, 5*s)})
	reconfigure(t, l, 200*ms, window.FixedSpec(8, s))
	reconfigure(t, l, 300*ms, window.FixedSpec(8, 2*s))
	requireSnapshot(t, l, 300*ms, window.FixedKindName, 8, 4, 4)
	take(t, l, 300*ms, 4)
	requireExactHint(t, l, 400*ms, 1, 2300*ms) // the window [0.3s, 2.3s) ends; the barrier stays
	take(t, l, 4300*ms, 4)
	requireExactHint(t, l, 4400*ms, 1, 5*s)
	requireSnapshot(t, l, 5*s, window.FixedKindName, 8, 5, 3)
}

func TestFixedCancelAtThePublicationInstant(t *testing.T) {
	t.Run("limit change: the window goes on, the cancel applies", func(t *testing.T) {
		l := fixed7(t)
		reconfigure(t, l, 400*ms, window.FixedSpec(8, s))
		l.Cancel(at(400*ms), 4)
		requireSnapshot(t, l, 400*ms, window.FixedKindName, 8, 3, 5)
	})
	t.Run("window change: the units stay in the barrier", func(t *testing.T) {
		l := fixed7(t)
		reconfigure(t, l, 400*ms, window.FixedSpec(10, 2*s))
		take(t, l, 400*ms, 1)
		l.Cancel(at(400*ms), 4) // the 4 are in the barrier; the new window's 1 goes
		requireSnapshot(t, l, 400*ms, window.FixedKindName, 10, 7, 3)
	})
}

// sliding9 is a sliding window of 10 per second in 4 segments with 3 units
// in segment 0, 4 in segment 1 and 2 in segment 2, at t=0.7s.
func sliding9(t *testing.T) *window.Sliding {
	l := window.NewSliding(10, s, 4, at(0))
	take(t, l, 0, 3)
	take(t, l, 300*ms, 4)
	take(t, l, 600*ms, 2)
	requireSnapshot(t, l, 700*ms, window.SlidingKindName, 10, 9, 1)
	return l
}

func TestSlidingReconfigureLimit(t *testing.T) {
	t.Run("lowered: every segment is kept", func(t *testing.T) {
		l := sliding9(t)
		reconfigure(t, l, 700*ms, window.SlidingSpec(5, s, 4))
		requireSnapshot(t, l, 700*ms, window.SlidingKindName, 5, 9, 0)
		requireExactHint(t, l, 700*ms, 1, 1250*ms) // 1s: 6 left; 1.25s: 2 left
		requireSnapshot(t, l, 1250*ms, window.SlidingKindName, 5, 3, 2)
	})
	t.Run("raised: exactly the difference", func(t *testing.T) {
		l := sliding9(t)
		reconfigure(t, l, 700*ms, window.SlidingSpec(12, s, 4))
		take(t, l, 700*ms, 3)
		requireExactHint(t, l, 700*ms, 1, s)
		requireExactHint(t, l, s, 4, 1250*ms)
	})
	t.Run("in a later segment than the last grant", func(t *testing.T) {
		l := sliding9(t)
		reconfigure(t, l, 800*ms, window.SlidingSpec(9, s, 4))
		requireExactHint(t, l, 800*ms, 1, s)
		take(t, l, s, 2)
		requireExactHint(t, l, s, 1, 1250*ms)
	})
	t.Run("same parameters change nothing", func(t *testing.T) {
		l := sliding9(t)
		reconfigure(t, l, 700*ms, window.SlidingSpec(10, s, 4))
		take(t, l, 700*ms, 1)
		requireExactHint(t, l, 700*ms, 1, s)
	})
}

func TestSlidingReconfigureSegments(t *testing.T) {
	t.Run("4 segments to 2: each segment is a barrier until the later of both exits", func(t *testing.T) {
		l := sliding9(t)
		reconfigure(t, l, 700*ms, window.SlidingSpec(10, s, 2))
		// Segments of 250ms become barriers until max(start+1s, end+1s):
		// 3 until 1.25s, 4 until 1.5s, 2 until 1.75s. New segments of
		// 500ms from 0.7s.
		requireSnapshot(t, l, 700*ms, window.SlidingKindName, 10, 9, 1)
		take(t, l, 700*ms, 1) // new segment [0.7s, 1.2s): until 1.7s
		requireExactHint(t, l, 800*ms, 1, 1250*ms)
		// The unit taken at 1.25s is in segment [1.2s, 1.7s): until 2.2s.
		requireSnapshot(t, l, 1500*ms-1, window.SlidingKindName, 10, 4+2+1+1, 2)
		requireSnapshot(t, l, 1500*ms, window.SlidingKindName, 10, 2+1+1, 6)
		requireSnapshot(t, l, 1700*ms, window.SlidingKindName, 10, 2+1, 7)
		requireSnapshot(t, l, 1750*ms, window.SlidingKindName, 10, 1, 9)
		requireSnapshot(t, l, 2200*ms, window.SlidingKindName, 10, 0, 10)
	})
	t.Run("window 1s to 2s: barriers last until they leave the new window", func(t *testing.T) {
		l := sliding9(t)
		reconfigure(t, l, 700*ms, window.SlidingSpec(10, 2*s, 4))
		// max(0+1s, 0.25s+2s) = 2.25s, max(1.25s, 2.5s), max(1.5s, 2.75s).
		take(t, l, 700*ms, 1) // segment [0.7s, 1.2s): until 2.7s
		requireExactHint(t, l, 800*ms, 1, 2250*ms)
		requireSnapshot(t, l, 2500*ms, window.SlidingKindName, 10, 2+1+1, 6)
		requireSnapshot(t, l, 2700*ms, window.SlidingKindName, 10, 2+1, 7)
		requireSnapshot(t, l, 2750*ms, window.SlidingKindName, 10, 1, 9)
	})
	t.Run("window 1s to 500ms: barriers last until they leave the old window", func(t *testing.T) {
		l := sliding9(t)
		reconfigure(t, l, 700*ms, window.SlidingSpec(10, 500*ms, 2))
		// max(1s, 0.75s), max(1.25s, 1s), max(1.5s, 1.25s).
		requireExactHint(t, l, 700*ms, 2, s)
		requireSnapshot(t, l, 1250*ms, window.SlidingKindName, 10, 2+2, 6)
		requireSnapshot(t, l, 1500*ms, window.SlidingKindName, 10, 0, 10) // the 2 at 1s left at 1.45s
	})
	t.Run("segments that stopped counting are not carried", func(t *testing.T) {
		l := sliding9(t)
		reconfigure(t, l, 1100*ms, window.SlidingSpec(10, s, 5))
		// Segment 0 left at 1s; 4 until max(1.25s, 1.5s), 2 until max(1.5s, 1.75s).
		requireSnapshot(t, l, 1100*ms, window.SlidingKindName, 10, 6, 4)
		requireSnapshot(t, l, 1500*ms, window.SlidingKindName, 10, 2, 8)
		requireSnapshot(t, l, 1750*ms, window.SlidingKindName, 10, 0, 10)
	})
	t.Run("the new segments start at the publication", func(t *testing.T) {
		l := window.NewSliding(1, s, 2, at(0))
		reconfigure(t, l, 100*ms, window.SlidingSpec(1, 3*s, 3))
		take(t, l, 1050*ms, 1) // segment [1.1s, 2.1s) starts later: this is [0.1s, 1.1s)
		requireExactHint(t, l, 1050*ms, 1, 3100*ms)
	})
	t.Run("limit, window and segments together", func(t *testing.T) {
		l := sliding9(t)
		reconfigure(t, l, 700*ms, window.SlidingSpec(4, 3*s, 3))
		requireSnapshot(t, l, 700*ms, window.SlidingKindName, 4, 9, 0)
		// max(1s, 0.25s+3s) = 3.25s, 3.5s, 3.75s.
		requireExactHint(t, l, 700*ms, 1, 3500*ms)
	})
}

func TestSlidingReconfigureKeepsBarriers(t *testing.T) {
	l := window.NewSliding(10, s, 2, at(0))
	l.Inherit(at(0), []spi.Usage{usage(4, 5*s)})
	reconfigure(t, l, 200*ms, window.SlidingSpec(8, s, 2))
	reconfigure(t, l, 300*ms, window.SlidingSpec(8, 2*s, 4))
	requireSnapshot(t, l, 300*ms, window.SlidingKindName, 8, 4, 4)
	take(t, l, 300*ms, 4)
	requireExactHint(t, l, 400*ms, 1, 2300*ms) // segment [0.3s, 0.8s) leaves; the barrier stays
	take(t, l, 4300*ms, 4)
	requireExactHint(t, l, 4400*ms, 1, 5*s)
	requireSnapshot(t, l, 5*s, window.SlidingKindName, 8, 5, 3)
}

func TestSlidingCancelAtThePublicationInstant(t *testing.T) {
	t.Run("limit change: the segment goes on, the cancel applies", func(t *testing.T) {
		l := sliding9(t)
		reconfigure(t, l, 600*ms, window.SlidingSpec(9, s, 4))
		l.Cancel(at(600*ms), 2)
		requireSnapshot(t, l, 600*ms, window.SlidingKindName, 9, 7, 2)
	})
	t.Run("segments change: the units stay in the barrier", func(t *testing.T) {
		l := sliding9(t)
		reconfigure(t, l, 600*ms, window.SlidingSpec(10, s, 2))
		take(t, l, 600*ms, 1)
		l.Cancel(at(600*ms), 2)
		requireSnapshot(t, l, 600*ms, window.SlidingKindName, 10, 9, 1)
	})
}

func TestReconfigureRejectsInvalidParamsAndChangesNothing(t *testing.T) {
	for _, tt := range []struct {
		name      string
		params    spi.Params
		wantParam string
	}{
		{"nil", nil, "permitLimit"},
		{"zero limit", spi.Params{"permitLimit": 0, "window": 1e9, "segments": 4}, "permitLimit"},
		{"short window", spi.Params{"permitLimit": 5, "window": 10, "segments": 2}, "window"},
		{"several wrong", spi.Params{"permitLimit": -1, "window": -1, "segments": -1}, "permitLimit"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, l := range []spi.Limiter{fixed7(t), sliding9(t)} {
				before := l.Snapshot(at(700 * ms))
				p := tt.params.Clone()
				if p != nil && l.Snapshot(at(0)).Kind == window.FixedKindName {
					delete(p, "segments")
				}
				err := l.Reconfigure(at(700*ms), p)
				var pe *spi.ParamError
				require.ErrorAs(t, err, &pe)
				require.Equal(t, tt.wantParam, pe.Param)
				require.Equal(t, before, l.Snapshot(at(700*ms)))
			}
		})
	}
	t.Run("the other kind's params", func(t *testing.T) {
		f := fixed7(t)
		err := f.Reconfigure(at(700*ms), window.SlidingSpec(10, s, 2).Params)
		require.EqualError(t, err, `segments: unknown parameter for kind "fixedwindow" (want permitLimit, window)`)
		sl := sliding9(t)
		err = sl.Reconfigure(at(700*ms), window.FixedSpec(10, s).Params)
		require.EqualError(t, err, "segments: required")
		requireSnapshot(t, f, 700*ms, window.FixedKindName, 10, 7, 3)
		requireSnapshot(t, sl, 700*ms, window.SlidingKindName, 10, 9, 1)
	})
}

func TestReconfigureDoesNotRetainParams(t *testing.T) {
	f := window.NewFixed(1, s, at(0))
	p := window.FixedSpec(5, s).Params
	require.NoError(t, f.Reconfigure(at(0), p))
	p["permitLimit"] = 1
	requireSnapshot(t, f, 0, window.FixedKindName, 5, 0, 5)
}

// A Cancel of a grant made before a window-length change gives nothing
// back: the grant's window may have ended before the change (its units
// gone with it), and the new window must not be lent them.
func TestCancelOfAGrantBeforeAWindowChangeGivesNothing(t *testing.T) {
	t.Run("fixed", func(t *testing.T) {
		l := window.NewFixed(1, 100*ms, at(0))
		take(t, l, 0, 1)
		reconfigure(t, l, 100*ms, window.FixedSpec(1, 300*ms)) // window 0 is over: no barrier
		take(t, l, 100*ms, 1)
		l.Cancel(at(0), 1) // the request granted at 0 was refused later
		requireSnapshot(t, l, 100*ms, window.FixedKindName, 1, 1, 0)
	})
	t.Run("sliding", func(t *testing.T) {
		l := window.NewSliding(1, 100*ms, 2, at(0))
		take(t, l, 0, 1)
		reconfigure(t, l, 100*ms, window.SlidingSpec(1, 300*ms, 3))
		take(t, l, 100*ms, 1)
		l.Cancel(at(0), 1)
		requireSnapshot(t, l, 100*ms, window.SlidingKindName, 1, 1, 0)
	})
}
