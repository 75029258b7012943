package kernel_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/kernel"
	"github.com/sluicerpc/sluice/limiters/tokenbucket"
	"github.com/sluicerpc/sluice/limiters/window"
	"github.com/sluicerpc/sluice/spi"
)

// ReleaseUnused: a request granted by policy but refused by a later step
// before it ran gives back its rate quota as well as its units.

func TestReleaseUnusedGivesBackRateQuota(t *testing.T) {
	f := newRateFixture(t)
	f.enable(kernel.Options{
		Global:  kernel.Rule{Limits: []spi.Spec{quotaSpec(quotaA, 2)}},
		Methods: map[string]kernel.Rule{echoSay: {Limits: []spi.Spec{conc(5).Limits[0], quotaSpec(quotaB, 2)}}},
	})
	for range 10 {
		p := f.grant(f.say)
		p.ReleaseUnused()
	}
	require.Zero(t, f.scope("global/rate").InUse)
	require.Zero(t, f.scope("method:echo/Say/rate").InUse)
	require.Zero(t, f.scope("method:echo/Say/concurrency").InUse)
	f.grant(f.say).Release() // used: counts
	f.grant(f.say).Release()
	f.refused(f.say, kernel.ReasonRate)
}

func TestReleaseUnusedIsExactlyOnceWithRelease(t *testing.T) {
	f := newRateFixture(t)
	f.enable(rateOnly(quotaA, 3))
	p := f.grant(f.say)
	p.Release()
	p.ReleaseUnused() // too late: the first end decided, quota stays taken
	require.EqualValues(t, 1, f.scope("global/rate").InUse)
	require.EqualValues(t, 1, f.k.Stats().DoubleReleases)

	p = f.grant(f.say)
	p.ReleaseUnused()
	p.ReleaseUnused()
	p.Release()
	require.EqualValues(t, 1, f.scope("global/rate").InUse, "given back once")
	require.EqualValues(t, 3, f.k.Stats().DoubleReleases)

	// On a refused or never-admitted permit it is Release.
	var c kernel.Permit
	require.True(t, f.k.Capture(&c))
	c.ReleaseUnused()
	require.Zero(t, f.k.Stats().LivePrograms-1)
}

// A ReleaseUnused that comes after the window that counted the grant has
// ended gives nothing back: the next window is not lent the quota.
func TestLateReleaseUnusedLendsNothingToTheNextWindow(t *testing.T) {
	for _, spec := range []spi.Spec{
		window.FixedSpec(3, time.Second),
		window.SlidingSpec(3, time.Second, 4),
	} {
		t.Run(spec.Kind, func(t *testing.T) {
			f := newClockedFixture(t)
			f.enable(globalRate(spec))
			late, err := f.admit(f.say) // granted, then refused by a later step
			require.NoError(t, err)
			require.Equal(t, 2, f.admitted(10))
			f.clock.Advance(2 * time.Second) // a new window: 3 again
			require.Equal(t, 3, f.admitted(10))
			late.ReleaseUnused()
			require.Zero(t, f.admitted(10), "the late give-back lent its unit to the next window")
		})
	}
}

// In the same window, ReleaseUnused gives the unit back at once.
func TestReleaseUnusedInTheSameWindowGivesBack(t *testing.T) {
	f := newClockedFixture(t)
	f.enable(globalRate(window.FixedSpec(3, time.Second)))
	p, err := f.admit(f.say)
	require.NoError(t, err)
	require.Equal(t, 2, f.admitted(10))
	f.clock.Advance(500 * time.Millisecond)
	p.ReleaseUnused()
	require.Equal(t, 1, f.admitted(10))
}

// A token bucket that has been full since the grant gives nothing back:
// the refill the grant's absence would have added was lost at capacity.
func TestLateReleaseUnusedAfterTheBucketWasFullGivesNothing(t *testing.T) {
	f := newClockedFixture(t)
	f.enable(globalRate(tokenbucket.Spec(3, 3, time.Second)))
	late, err := f.admit(f.say)
	require.NoError(t, err)
	f.clock.Advance(time.Second) // full again
	require.Equal(t, 3, f.admitted(10))
	late.ReleaseUnused()
	require.Zero(t, f.admitted(10), "a bucket full since the grant took the unit back")

	// Not full since: the unit comes back.
	f.clock.Advance(time.Second)
	p, err := f.admit(f.say)
	require.NoError(t, err)
	require.Equal(t, 2, f.admitted(10))
	f.clock.Advance(100 * time.Millisecond)
	p.ReleaseUnused()
	require.Equal(t, 1, f.admitted(10))
}
