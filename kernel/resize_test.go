package kernel_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/kernel"
)

// Seed 000 section B and seed 001's concurrency matrix.

func TestGrowExposesExactlyTheNewCapacity(t *testing.T) {
	f := newFixture(t)
	f.enable(globalOnly(1))
	a := f.grant(f.say)
	f.refused(f.say, kernel.ReasonConcurrency)
	f.update(globalOnly(3))
	b, c := f.grant(f.say), f.grant(f.add)
	f.refused(f.shout, kernel.ReasonConcurrency)
	for _, p := range []*kernel.Permit{a, b, c} {
		p.Release()
	}
	f.requireIdle()
}

func TestGrowWakesFIFOWaiters(t *testing.T) {
	f := newFixture(t)
	f.enable(withQueue(globalOnly(1), 8, 1024, time.Minute))
	holder := f.grant(f.say)
	w1 := f.queue(context.Background(), kernel.Request{Method: f.say})
	w2 := f.queue(context.Background(), kernel.Request{Method: f.add})
	w3 := f.queue(context.Background(), kernel.Request{Method: f.shout})
	f.update(withQueue(globalOnly(3), 8, 1024, time.Minute))
	// Two more units: the two oldest waiters get them, in order.
	require.NoError(t, w1.result(t))
	require.NoError(t, w2.result(t))
	w3.stillWaiting(t)
	// A new request does not barge ahead of w3.
	f.refusedWhileQueued(f.say)
	holder.Release()
	require.NoError(t, w3.result(t))
	for _, w := range []*pending{w1, w2, w3} {
		w.p.Release()
	}
	f.requireIdle()
}

// refusedWhileQueued asserts that a request with a short queue delay
// cannot take capacity ahead of existing waiters: it waits and times out.
func (f *fixture) refusedWhileQueued(m kernel.MethodID) {
	f.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w := f.queue(ctx, kernel.Request{Method: m})
	cancel()
	require.ErrorIs(f.t, w.result(f.t), context.Canceled)
}

func TestShrinkKeepsHoldersAndAdmitsNobodyUntilBelow(t *testing.T) {
	f := newFixture(t)
	f.enable(globalOnly(3))
	a, b, c := f.grant(f.say), f.grant(f.say), f.grant(f.add)
	f.update(globalOnly(1))
	sc := f.scope("global/concurrency")
	require.EqualValues(t, 1, sc.Limit)
	require.EqualValues(t, 3, sc.InUse, "no holder is revoked")
	f.refused(f.say, kernel.ReasonConcurrency)
	a.Release()
	f.refused(f.say, kernel.ReasonConcurrency) // 2 held, limit 1
	b.Release()
	f.refused(f.say, kernel.ReasonConcurrency) // 1 held, limit 1
	c.Release()
	d := f.grant(f.say) // 0 held: capacity resumes
	f.refused(f.add, kernel.ReasonConcurrency)
	d.Release()
	f.requireIdle()
}

func TestQueuedWaiterSurvivesShrinkAndProceeds(t *testing.T) {
	f := newFixture(t)
	q := func(n int64) kernel.Options { return withQueue(globalOnly(n), 8, 1024, time.Minute) }
	f.enable(q(2))
	a, b := f.grant(f.say), f.grant(f.say)
	w := f.queue(context.Background(), kernel.Request{Method: f.add})
	f.update(q(1))
	a.Release()
	w.stillWaiting(t) // 1 held, limit 1
	b.Release()
	require.NoError(t, w.result(t))
	w.p.Release()
	f.requireIdle()
}

func TestServiceAndMethodResizePreserveActiveState(t *testing.T) {
	f := newFixture(t)
	opts := func(svc, meth int64) kernel.Options {
		return kernel.Options{
			Services: map[string]kernel.Rule{"echo": conc(svc)},
			Methods:  map[string]kernel.Rule{echoSay: conc(meth)},
		}
	}
	f.enable(opts(3, 2))
	a, b := f.grant(f.say), f.grant(f.say)
	f.refused(f.say, kernel.ReasonConcurrency) // method full
	c := f.grant(f.shout)                      // service: 3 of 3
	f.refused(f.shout, kernel.ReasonConcurrency)
	f.update(opts(2, 1))
	require.EqualValues(t, 3, f.scope("service:echo/concurrency").InUse)
	require.EqualValues(t, 2, f.scope("method:echo/Say/concurrency").InUse)
	f.refused(f.say, kernel.ReasonConcurrency)
	a.Release()
	f.refused(f.say, kernel.ReasonConcurrency) // service 2 of 2, method 1 of 1
	b.Release()
	d := f.grant(f.say) // service 1 < 2 and method 0 < 1
	f.refused(f.say, kernel.ReasonConcurrency)
	f.refused(f.shout, kernel.ReasonConcurrency) // service 2 of 2
	e := f.grant(f.add)                          // other service: no rule
	for _, p := range []*kernel.Permit{c, d, e} {
		p.Release()
	}
	f.requireIdle()
}
