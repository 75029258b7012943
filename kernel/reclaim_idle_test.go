package kernel_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/kernel"
	"github.com/sluicerpc/sluice/limiters/concurrency"
	"github.com/sluicerpc/sluice/limiters/tokenbucket"
)

// Idle keys are reclaimed when no new key arrives: ReclaimIdle runs the
// due pass to its end in steps of at most about 256 entries. Before it is
// due it reclaims nothing; a held key and a key used within IdleTimeout
// are kept; a second call in the same instant has nothing left to do.
// (Which entries a step may reclaim, rate state at rest included, is the
// rule the new keys' steps follow: TestReclaimWorkPerNewKeyIsBounded and
// rate_rest_test.go.) Issue 37: reclaim ran only on new keys, so a
// namespace that stopped receiving them kept its idle keys for ever.
func TestReclaimIdleReclaimsWithoutNewKeys(t *testing.T) {
	f := newClockedFixture(t)
	const keys, idle = 10_000, time.Minute
	f.enable(partitioned(byTenant(1), 2*keys, idle, concurrency.Spec(1), tokenbucket.Spec(5, 5, time.Hour)))
	for i := range keys {
		f.grantT(tenant(fmt.Sprint("idle-", i))).Release()
	}
	held := f.grantT(tenant("held"))
	f.grantT(tenant("recent")).Release()
	f.clock.Advance(30 * time.Second)
	require.Zero(t, f.k.ReclaimIdle(context.Background()), "no pass is due: every key was used 30 s ago")
	require.EqualValues(t, keys+2, f.partition("partition:tenant@v1").Keys)

	f.clock.Advance(time.Hour)           // idle, and every bucket full again
	f.grantT(tenant("recent")).Release() // an existing key: no reclaim step
	var steps, most int
	kernel.SetSweepStepHook(func(visited int) { steps, most = steps+1, max(most, visited) })
	defer kernel.SetSweepStepHook(nil)
	require.Equal(t, keys, f.k.ReclaimIdle(context.Background()))
	require.LessOrEqual(t, most, 256+16, "entries one reclaim step visited")
	require.GreaterOrEqual(t, steps, keys/256)
	t.Logf("%d idle keys reclaimed by one ReclaimIdle in %d steps, at most %d entries a step", keys, steps, most)

	require.EqualValues(t, 2, f.partition("partition:tenant@v1").Keys, "held and recent are kept")
	for _, key := range []string{"held", "recent"} {
		_, ok := f.k.PartitionEntry("partition:tenant@v1", key)
		require.True(t, ok, key)
	}
	steps = 0
	require.Zero(t, f.k.ReclaimIdle(context.Background()), "the pass ended: the next is due an IdleTimeout later")
	require.Zero(t, steps)
	held.Release()
}

// ReclaimIdle stops between two steps when its context ends (the server's
// Stop is bounded by its own), and the next call resumes the pass.
func TestReclaimIdleStopsWhenItsContextEnds(t *testing.T) {
	f := newPartFixture(t)
	const keys, idle = 2_000, time.Minute
	f.enable(partitioned(byTenant(1), 2*keys, idle, concurrency.Spec(1)))
	for i := range keys {
		f.grantT(tenant(fmt.Sprint("idle-", i))).Release()
	}
	f.clock.Advance(idle)
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	require.Zero(t, f.k.ReclaimIdle(ended))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	steps := 0
	kernel.SetSweepStepHook(func(int) { steps++; cancel() })
	defer kernel.SetSweepStepHook(nil)
	first := f.k.ReclaimIdle(ctx)
	require.Equal(t, 1, steps, "one step, then the ended context")
	require.Positive(t, first)
	require.Equal(t, keys-first, f.k.ReclaimIdle(context.Background()), "the next call resumes the pass")
	require.Zero(t, f.partition("partition:tenant@v1").Keys)
}
