package kernel_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/kernel"
)

// Seed 000 section C: disable and re-enable while old holders remain. A
// naive controller swap would split the accounting and admit 4.
func TestReenableBindsToStateOldHoldersOccupy(t *testing.T) {
	f := newFixture(t)
	f.enable(globalOnly(2))
	a, b := f.grant(f.say), f.grant(f.add)
	_, err := f.k.Disable()
	require.NoError(t, err)
	f.enable(globalOnly(2))
	f.refused(f.say, kernel.ReasonConcurrency)
	require.EqualValues(t, 2, f.scope("global/concurrency").InUse)
	a.Release()
	c := f.grant(f.say)
	f.refused(f.say, kernel.ReasonConcurrency)
	b.Release()
	c.Release()
	f.requireIdle()
}

func TestReenableBindsToStateOldWaitersOccupy(t *testing.T) {
	f := newFixture(t)
	q := withQueue(kernel.Options{Methods: map[string]kernel.Rule{echoSay: conc(1)}}, 4, 1024, time.Minute)
	f.enable(q)
	holder := f.grant(f.say)
	w := f.queue(context.Background(), kernel.Request{Method: f.say})
	_, err := f.k.Disable()
	require.NoError(t, err)
	f.enable(q)
	// The new program sees the old waiter on the same state: no barging.
	f.refusedWhileQueued(f.say)
	holder.Release()
	require.NoError(t, w.result(t))
	f.refusedWhileQueued(f.say)
	w.p.Release()
	f.requireIdle()
}

// A removed rule whose old holders are still active is bound again when it
// is re-added: the re-added limit counts them.
func TestRuleRemovedAndReaddedCountsOldHolders(t *testing.T) {
	f := newFixture(t)
	with := kernel.Options{Global: conc(100), Methods: map[string]kernel.Rule{echoSay: conc(1)}}
	f.enable(with)
	a := f.grant(f.say)
	f.update(globalOnly(100))
	b := f.grant(f.say) // the method rule is gone
	f.update(with)
	f.refused(f.say, kernel.ReasonConcurrency) // a still holds the method state
	a.Release()
	c := f.grant(f.say)
	b.Release()
	c.Release()
	f.requireIdle()
}
