package kernel_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/kernel"
)

// Seed 000 section A: enable and disable.

func TestEnableFromDisabledLimitsNewRequests(t *testing.T) {
	f := newFixture(t)
	p, err := f.admit(f.say)
	require.NoError(t, err)
	require.Nil(t, p, "disabled: no permit")
	f.enable(globalOnly(1))
	a := f.grant(f.say)
	f.refused(f.say, kernel.ReasonConcurrency)
	a.Release()
	f.requireIdle()
}

func TestDisableBypassesNewRequests(t *testing.T) {
	f := newFixture(t)
	f.enable(globalOnly(1))
	a := f.grant(f.say)
	g, err := f.k.Disable()
	require.NoError(t, err)
	require.Equal(t, uint64(2), g)
	for range 10 {
		p, err := f.admit(f.say)
		require.NoError(t, err)
		require.Nil(t, p, "new requests bypass admission")
	}
	a.Release()
	f.requireIdle()
}

func TestDisableKeepsActivePermits(t *testing.T) {
	f := newFixture(t)
	f.enable(globalOnly(2))
	a, b := f.grant(f.say), f.grant(f.add)
	_, err := f.k.Disable()
	require.NoError(t, err)
	require.True(t, a.Granted())
	require.EqualValues(t, 2, f.scope("global/concurrency").InUse)
	a.Release()
	require.EqualValues(t, 1, f.scope("global/concurrency").InUse)
	b.Release()
	f.requireIdle()
	require.Zero(t, f.k.Stats().LivePrograms, "the disabled program drained")
}

func TestDisableKeepsQueuedRequests(t *testing.T) {
	f := newFixture(t)
	f.enable(withQueue(globalOnly(1), 4, 1024, time.Minute))
	holder := f.grant(f.say)
	w := f.queue(context.Background(), kernel.Request{Method: f.add, Bytes: 100})
	_, err := f.k.Disable()
	require.NoError(t, err)
	w.stillWaiting(t)
	st := f.k.Stats()
	require.Equal(t, 1, st.QueuedCalls)
	require.EqualValues(t, 100, st.QueuedBytes)

	holder.Release() // the old program's waiter takes the freed unit
	require.NoError(t, w.result(t))
	require.True(t, w.p.Granted())
	require.EqualValues(t, 1, f.scope("global/concurrency").InUse)
	w.p.Release()
	f.requireIdle()
	require.Zero(t, f.k.Stats().LivePrograms)
}

func TestDisableIsIdempotent(t *testing.T) {
	f := newFixture(t)
	g, err := f.k.Disable()
	require.NoError(t, err)
	require.Zero(t, g, "disabling a disabled kernel publishes nothing")
	f.enable(globalOnly(1))
	g, err = f.k.Disable()
	require.NoError(t, err)
	g2, err := f.k.Disable()
	require.NoError(t, err)
	require.Equal(t, g, g2)
}

func TestRepeatedEnableDisableLeaksNothing(t *testing.T) {
	f := newFixture(t)
	for i := range 1000 {
		f.enable(kernel.Options{Global: conc(int64(i%7 + 1)), Methods: map[string]kernel.Rule{echoSay: conc(3)}})
		p := f.grant(f.say)
		_, err := f.k.Disable()
		require.NoError(t, err)
		p.Release()
	}
	st := f.k.Stats()
	require.Zero(t, st.LivePrograms)
	require.Zero(t, st.States)
	require.Equal(t, uint64(2000), st.Generation)
}

func TestModeConflicts(t *testing.T) {
	f := newFixture(t)
	_, err := f.k.Update(0, globalOnly(1))
	require.ErrorIs(t, err, kernel.ErrModeConflict)
	require.Equal(t, kernel.ModeConflict, kernel.OutcomeOf(err))
	g := f.enable(globalOnly(1))
	_, err = f.k.Enable(globalOnly(2))
	require.ErrorIs(t, err, kernel.ErrModeConflict)
	require.Equal(t, g, f.k.Generation(), "a conflict publishes nothing")
	require.EqualValues(t, 1, f.scope("global/concurrency").Limit, "and commits nothing")
}
