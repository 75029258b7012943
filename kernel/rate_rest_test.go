package kernel_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/kernel"
	"github.com/sluicerpc/sluice/limiters/concurrency"
	"github.com/sluicerpc/sluice/limiters/tokenbucket"
)

// A rate state's consumed quota is kept until a fresh limiter would be no
// different, so that reclaiming it changes nothing: no free burst across
// Disable -> Enable even after every request of the old program is gone,
// nor when an idle partition entry is reclaimed.

func TestDisableEnableAfterReclaimIsNoFreeBurst(t *testing.T) {
	f := newClockedFixture(t)
	o := globalRate(tokenbucket.Spec(10, 10, time.Second))
	f.enable(o)
	require.Equal(t, 10, f.admitted(20))
	_, err := f.k.Disable()
	require.NoError(t, err)
	st := f.k.Stats()
	require.Zero(t, st.LivePrograms, "nothing keeps the old program")
	require.Equal(t, 1, st.States, "the drained bucket is kept: it is not full")
	f.enable(o)
	require.Zero(t, f.admitted(20), "the bucket comes back empty, not full")

	// Once it would be full again it is indistinguishable from a fresh
	// one and is reclaimed; Enable then starts a full bucket.
	_, err = f.k.Disable()
	require.NoError(t, err)
	f.clock.Advance(time.Second)
	require.Zero(t, f.k.Stats().States, "at rest: reclaimed")
	f.enable(o)
	require.Equal(t, 10, f.admitted(20))
}

func TestDisableEnableKeepsPartitionRateUsage(t *testing.T) {
	f := newClockedFixture(t)
	o := partitioned(byTenant(1), 10, time.Minute, tokenbucket.Spec(3, 3, time.Hour))
	f.enable(o)
	for range 3 {
		f.grantT(tenant("a")).Release()
	}
	_, err := f.k.Disable()
	require.NoError(t, err)
	require.Len(t, f.k.Stats().Partitions, 1, "kept for the usage of \"a\"")
	f.enable(o)
	f.refusedT(tenant("a"), kernel.ReasonRate)
	f.grantT(tenant("b")).Release()
}

// An idle partition entry is reclaimed only once its rate state is at
// rest: a key that comes back after IdleTimeout finds its usage.
func TestIdlePartitionEntryKeepsItsRateUsage(t *testing.T) {
	f := newClockedFixture(t)
	f.enable(partitioned(byTenant(1), 1, time.Minute, concurrency.Spec(10), tokenbucket.Spec(5, 5, time.Hour)))
	for range 5 {
		f.grantT(tenant("a")).Release()
	}
	f.clock.Advance(2 * time.Minute) // idle, but its bucket is empty
	f.refusedT(tenant("b"), kernel.ReasonPartitionCapacity)
	f.refusedT(tenant("a"), kernel.ReasonRate)
	f.clock.Advance(time.Hour) // full again: "a" can go
	f.grantT(tenant("b")).Release()
	_, hasA := f.k.PartitionEntry("partition:tenant@v1", "a")
	require.False(t, hasA)
}
