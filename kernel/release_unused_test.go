package kernel_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/kernel"
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
