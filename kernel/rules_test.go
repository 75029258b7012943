package kernel_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/kernel"
)

// Seed 000 section F (routing) and seed 001's service/method matrix.

func TestAddServiceRule(t *testing.T) {
	f := newFixture(t)
	f.enable(globalOnly(100))
	a := f.grant(f.say)
	f.update(kernel.Options{Global: conc(100), Services: map[string]kernel.Rule{"echo": conc(1)}})
	b := f.grant(f.shout) // the old request a does not count: it holds no echo state
	f.refused(f.say, kernel.ReasonConcurrency)
	c := f.grant(f.add) // other service
	for _, p := range []*kernel.Permit{a, b, c} {
		p.Release()
	}
	f.requireIdle()
}

func TestRemoveServiceRuleWhileOldProgramActive(t *testing.T) {
	f := newFixture(t)
	f.enable(kernel.Options{Global: conc(100), Services: map[string]kernel.Rule{"echo": conc(1)}})
	a := f.grant(f.say)
	f.update(globalOnly(100))
	b, c := f.grant(f.say), f.grant(f.shout) // the rule is gone for new requests
	require.EqualValues(t, 1, f.scope("service:echo/concurrency").InUse, "the old request keeps its state")
	a.Release() // releases into the state it acquired under the old program
	b.Release()
	c.Release()
	f.requireIdle()
	require.Equal(t, 1, f.k.Stats().States, "the service state is reclaimed once unbound and idle")
}

func TestAddReplaceRemoveMethodRule(t *testing.T) {
	f := newFixture(t)
	f.enable(globalOnly(100))
	f.update(kernel.Options{Global: conc(100), Methods: map[string]kernel.Rule{echoSay: conc(1)}})
	a := f.grant(f.say)
	f.refused(f.say, kernel.ReasonConcurrency)
	b := f.grant(f.shout)
	// Replace the method rule (a resize of the same scope's state).
	f.update(kernel.Options{Global: conc(100), Methods: map[string]kernel.Rule{echoSay: conc(2)}})
	c := f.grant(f.say)
	f.refused(f.say, kernel.ReasonConcurrency)
	// Move the rule to another method.
	f.update(kernel.Options{Global: conc(100), Methods: map[string]kernel.Rule{echoShout: conc(1)}})
	d := f.grant(f.say)
	e := f.grant(f.shout) // b was granted before the rule existed: it holds no Shout unit
	f.refused(f.shout, kernel.ReasonConcurrency)
	for _, p := range []*kernel.Permit{a, b, c, d, e} {
		p.Release()
	}
	f.requireIdle()
}

// Every scope of a route is enforced, and a refusal at a later scope gives
// back what earlier scopes granted (all or nothing).
func TestCompositeScopesAllOrNothing(t *testing.T) {
	f := newFixture(t)
	f.enable(kernel.Options{
		Global:   conc(3),
		Services: map[string]kernel.Rule{"echo": conc(2)},
		Methods:  map[string]kernel.Rule{echoSay: conc(1)},
	})
	a := f.grant(f.say)
	p, err := f.admit(f.say)
	requireReason(t, err, kernel.ReasonConcurrency)
	require.Equal(t, "method:echo/Say/concurrency", p.Scope())
	st := f.k.Stats()
	g, _ := st.Scope("global/concurrency")
	s, _ := st.Scope("service:echo/concurrency")
	require.EqualValues(t, 1, g.InUse, "the refused request gave back its global unit")
	require.EqualValues(t, 1, s.InUse, "and its service unit")

	b := f.grant(f.shout)
	p, err = f.admit(f.shout)
	requireReason(t, err, kernel.ReasonConcurrency)
	require.Equal(t, "service:echo/concurrency", p.Scope())
	c := f.grant(f.add)
	p, err = f.admit(f.add)
	requireReason(t, err, kernel.ReasonConcurrency)
	require.Equal(t, "global/concurrency", p.Scope())
	for _, p := range []*kernel.Permit{a, b, c} {
		p.Release()
	}
	f.requireIdle()
}

// All scopes of one request come from one program: a request that
// captured N acquires and releases N's states even if N+1 is published
// between its capture and its admission (the SharpLink review bug of a
// Global permit from N and a Method permit from N+1).
func TestCapturedProgramDecidesEverything(t *testing.T) {
	f := newFixture(t)
	f.enable(kernel.Options{Global: conc(10), Methods: map[string]kernel.Rule{echoSay: conc(1)}})
	var early kernel.Permit
	require.True(t, f.k.Capture(&early)) // captures N
	f.update(kernel.Options{Global: conc(10), Services: map[string]kernel.Rule{"echo": conc(1)}})
	require.NoError(t, early.Admit(context.Background(), kernel.Request{Method: f.say}))
	sc := f.k.Stats()
	m, ok := sc.Scope("method:echo/Say/concurrency")
	require.True(t, ok)
	require.EqualValues(t, 1, m.InUse, "N's method rule applied")
	s, _ := sc.Scope("service:echo/concurrency")
	require.Zero(t, s.InUse, "N+1's service rule did not")
	late := f.grant(f.say) // N+1: service echo 1 of 1 now
	f.refused(f.shout, kernel.ReasonConcurrency)

	// Disable between capture and admission: the captured program still
	// applies (and its waiter keeps it after Disable).
	var captured kernel.Permit
	require.True(t, f.k.Capture(&captured))
	_, err := f.k.Disable()
	require.NoError(t, err)
	err = captured.Admit(context.Background(), kernel.Request{Method: f.shout})
	requireReason(t, err, kernel.ReasonConcurrency)
	early.Release()
	late.Release()
	f.requireIdle()
	require.Zero(t, f.k.Stats().LivePrograms)
}

// A waiter blocked on one state and then another keeps its FIFO place.
func TestWaiterMovesBetweenStatesInOrder(t *testing.T) {
	f := newFixture(t)
	f.enable(withQueue(kernel.Options{Global: conc(1), Methods: map[string]kernel.Rule{echoSay: conc(1)}}, 8, 1024, time.Minute))
	m := f.grant(f.say) // holds global and method
	w1 := f.queue(context.Background(), kernel.Request{Method: f.say})
	w2 := f.queue(context.Background(), kernel.Request{Method: f.add})
	m.Release()
	// w1 is oldest: it takes both units; w2 keeps waiting on global.
	require.NoError(t, w1.result(t))
	w2.stillWaiting(t)
	w1.p.Release()
	require.NoError(t, w2.result(t))
	w2.p.Release()
	f.requireIdle()
}
