package kernel_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/kernel"
)

func TestDisabledCaptureIsFalse(t *testing.T) {
	f := newFixture(t)
	var p kernel.Permit
	require.False(t, f.k.Capture(&p))
	p.Release() // idle: nothing happens
	require.Zero(t, f.k.Stats().DoubleReleases)
}

func TestEnableLimitsNewRequests(t *testing.T) {
	f := newFixture(t)
	g := f.enable(globalOnly(2))
	require.Equal(t, uint64(1), g)
	a, b := f.grant(f.say), f.grant(f.add)
	f.refused(f.shout, kernel.ReasonConcurrency)
	a.Release()
	c := f.grant(f.shout)
	b.Release()
	c.Release()
	f.requireIdle()
}
