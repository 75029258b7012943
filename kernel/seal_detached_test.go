package kernel_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/kernel"
	"github.com/sluicerpc/sluice/limiters/concurrency"
)

// Seal reaches every waiter of every state anything still references, not
// only the states the current program binds: a waiter on a partition
// entry's state that a later update detached ends at Seal, and nothing is
// granted after it.

// century is a queue delay longer than the quota kind's far retry hint, so
// that its refusals wait instead of being refused as beyond reach.
const century = 100 * 365 * 24 * time.Hour

func TestSealEndsWaiterOfARemovedPartitionRate(t *testing.T) {
	f := newPartFixture(t)
	o := withQueue(partitioned(byTenant(1), 10, time.Minute, concurrency.Spec(10), quotaSpec(quotaA, 1)), 8, 1024, century)
	f.enable(o)
	f.grantT(tenant("a")).Release() // the quota of "a" is used up
	w := f.queue(context.Background(), kernel.Request{Method: f.say, Metadata: md{"tenant": "a"}})
	// The rate limit is removed: w's state is detached from the entry.
	f.update(withQueue(partitioned(byTenant(1), 10, time.Minute, concurrency.Spec(10)), 8, 1024, century))
	f.k.Seal()
	requireReason(t, w.result(t), kernel.ReasonUnavailable)
	require.Zero(t, f.k.Stats().QueuedCalls)
}

func TestSealEndsWaiterOfAReplacedPartitionRateAlgorithm(t *testing.T) {
	f := newPartFixture(t)
	q := func(kind string) kernel.Options {
		return withQueue(partitioned(byTenant(1), 10, time.Minute, quotaSpec(kind, 1)), 8, 1024, century)
	}
	f.enable(q(quotaA))
	f.grantT(tenant("a")).Release()
	w := f.queue(context.Background(), kernel.Request{Method: f.say, Metadata: md{"tenant": "a"}})
	f.update(q(quotaB)) // the old lineage is sealed; the usage inherited
	f.k.Seal()
	requireReason(t, w.result(t), kernel.ReasonUnavailable)
	require.Zero(t, f.k.Stats().QueuedCalls)
}

// A request that captured a program before Seal and admits after it is
// refused: no grant after Seal.
func TestAdmitAfterSealIsRefusedEvenUnderAnEarlierCapture(t *testing.T) {
	f := newFixture(t)
	f.enable(globalOnly(10))
	var p kernel.Permit
	require.True(t, f.k.Capture(&p))
	f.k.Seal()
	requireReason(t, p.Admit(context.Background(), kernel.Request{Method: f.say}), kernel.ReasonUnavailable)
	p.Release()
	require.NoError(t, f.k.Drain(context.Background()))
}

// A waiter that a release would grant after Seal is refused instead: the
// release dispatches, sees the seal, and grants nothing.
func TestNoWaiterIsGrantedAfterSeal(t *testing.T) {
	f := newFixture(t)
	f.enable(withQueue(globalOnly(1), 8, 1024, time.Minute))
	h := f.grant(f.say)
	w := f.queue(context.Background(), kernel.Request{Method: f.say})
	f.k.Seal()
	h.Release()
	requireReason(t, w.result(t), kernel.ReasonUnavailable)
	require.NoError(t, f.k.Drain(context.Background()))
}
