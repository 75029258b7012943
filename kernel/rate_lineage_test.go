package kernel_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/kernel"
	"github.com/sluicerpc/sluice/limiters/concurrency"
	"github.com/sluicerpc/sluice/spi"
)

// Rate lineages (seed 000 section E, the kernel's part; the algorithms'
// own parameter changes are tested in their modules).

const quotaA, quotaB = "test.quotaA", "test.quotaB"

func newRateFixture(t *testing.T) *fixture {
	t.Helper()
	reg := &spi.Registry{}
	reg.MustRegister(concurrency.Kind{})
	reg.MustRegister(quotaKind{name: quotaA})
	reg.MustRegister(quotaKind{name: quotaB})
	reg.MustRegister(plainRateKind{})
	var b kernel.CatalogBuilder
	f := &fixture{t: t, enqueued: make(chan *kernel.Permit, 1024)}
	f.say = b.MustAdd("echo", "Say")
	f.shout = b.MustAdd("echo", "Shout")
	f.add = b.MustAdd("math", "Add")
	k, err := kernel.New(kernel.Config{Catalog: b.Build(), Registry: reg})
	require.NoError(t, err)
	f.k = k
	k.SetHooks(&kernel.Hooks{AfterEnqueue: func(p *kernel.Permit) { f.enqueued <- p }})
	return f
}

func rateOnly(kind string, limit int64) kernel.Options {
	return kernel.Options{Global: kernel.Rule{Limits: []spi.Spec{quotaSpec(kind, limit)}}}
}

// grantN admits n requests (released at once: rate quota stays taken).
func (f *fixture) grantN(m kernel.MethodID, n int) {
	f.t.Helper()
	for range n {
		f.grant(m).Release()
	}
}

func TestRateParameterChangeKeepsTheLineage(t *testing.T) {
	f := newRateFixture(t)
	f.enable(rateOnly(quotaA, 5))
	f.grantN(f.say, 4)
	f.update(rateOnly(quotaA, 6)) // same kind: reconfigured in place, 4 stay used
	f.grantN(f.say, 2)
	f.refused(f.say, kernel.ReasonRate)
	// A concurrency-only change elsewhere keeps the rate state too.
	o := rateOnly(quotaA, 6)
	o.Methods = map[string]kernel.Rule{echoSay: conc(10)}
	f.update(o)
	f.refused(f.add, kernel.ReasonRate)
	require.Len(t, f.k.Stats().Scopes, 2)
}

func TestAlgorithmReplacementCarriesUsageAsBarrier(t *testing.T) {
	f := newRateFixture(t)
	f.enable(rateOnly(quotaA, 10))
	f.grantN(f.say, 7)
	f.update(rateOnly(quotaB, 10)) // a new lineage that inherits 7
	f.grantN(f.say, 3)
	f.refused(f.say, kernel.ReasonRate)
	sc := f.scope("global/rate")
	require.Equal(t, quotaB, sc.Kind)
	require.EqualValues(t, 10, sc.InUse)
}

// A request that captured the old program is charged to the new lineage.
func TestOldProgramRequestsAreChargedToTheCurrentLineage(t *testing.T) {
	f := newRateFixture(t)
	f.enable(rateOnly(quotaA, 10))
	f.grantN(f.say, 2)
	var old kernel.Permit
	require.True(t, f.k.Capture(&old))
	f.update(rateOnly(quotaB, 3)) // inherits 2: one unit left
	require.NoError(t, old.Admit(context.Background(), kernel.Request{Method: f.say}))
	old.Release()
	f.refused(f.say, kernel.ReasonRate)
	require.EqualValues(t, 3, f.scope("global/rate").InUse)
}

// Regression from the SharpLink review: ten late grants of waiters queued
// on the old lineage leave at least ten units of debt on the new one (not
// one).
func TestLateGrantsAreEachChargedToTheNewLineage(t *testing.T) {
	f := newRateFixture(t)
	// The quota kind's retry hint is farRetry (2100): a waiter whose
	// patience ends before it is refused at once with reason rate, so
	// these waiters may wait for a century.
	q := func(kind string, limit int64) kernel.Options {
		return withQueue(rateOnly(kind, limit), 64, 1<<20, 100*365*24*time.Hour)
	}
	f.enable(q(quotaA, 5))
	f.grantN(f.say, 5)
	var ws []*pending
	for range 10 {
		ws = append(ws, f.queue(context.Background(), kernel.Request{Method: f.say}))
	}
	f.update(q(quotaB, 100)) // inherits 5; the publication wakes the old waiters
	for _, w := range ws {
		require.NoError(t, w.result(t))
		w.p.Release()
	}
	require.EqualValues(t, 15, f.scope("global/rate").InUse, "5 inherited + 10 late grants")
	f.requireQueueEmpty()
}

func (f *fixture) requireQueueEmpty() {
	f.t.Helper()
	st := f.k.Stats()
	require.Zero(f.t, st.QueuedCalls)
	require.Zero(f.t, st.QueuedBytes)
}

func TestRemovedAndReaddedRateStartsANewLineage(t *testing.T) {
	f := newRateFixture(t)
	f.enable(rateOnly(quotaA, 3))
	f.grantN(f.say, 3)
	var old kernel.Permit // keeps the first lineage live
	require.True(t, f.k.Capture(&old))
	f.update(globalOnly(100)) // rate removed
	f.update(kernel.Options{Global: kernel.Rule{Limits: []spi.Spec{concurrency.Spec(100), quotaSpec(quotaA, 3)}}})
	f.grantN(f.say, 3) // fresh lineage: the rule was absent in between
	f.refused(f.say, kernel.ReasonRate)
	old.Release()
}

func TestDisableEnableReusesTheNewestLiveLineage(t *testing.T) {
	f := newRateFixture(t)
	f.enable(rateOnly(quotaA, 4))
	f.grantN(f.say, 3)
	var holder kernel.Permit // a request still under the first program
	require.True(t, f.k.Capture(&holder))
	_, err := f.k.Disable()
	require.NoError(t, err)
	f.enable(rateOnly(quotaA, 4))
	f.grantN(f.say, 1) // the live lineage: 3 + 1
	f.refused(f.say, kernel.ReasonRate)
	holder.Release()

	// Once no request keeps it live, the lineage is still kept while its
	// consumed quota counts (this quota never refills): a disable and
	// enable is no free burst (rate_rest_test.go has the refilling case).
	_, err = f.k.Disable()
	require.NoError(t, err)
	require.Zero(t, f.k.Stats().LivePrograms)
	f.enable(rateOnly(quotaA, 4))
	f.refused(f.say, kernel.ReasonRate)
}

// A request refused at a later scope consumes no rate quota anywhere.
func TestRefusedRequestConsumesNoRateQuota(t *testing.T) {
	f := newRateFixture(t)
	f.enable(kernel.Options{
		Global:  kernel.Rule{Limits: []spi.Spec{quotaSpec(quotaA, 5)}},
		Methods: map[string]kernel.Rule{echoSay: {Limits: []spi.Spec{concurrency.Spec(1), quotaSpec(quotaB, 5)}}},
	})
	h := f.grant(f.say)
	for range 10 {
		f.refused(f.say, kernel.ReasonConcurrency) // method concurrency full
	}
	require.EqualValues(t, 1, f.scope("global/rate").InUse)
	require.EqualValues(t, 1, f.scope("method:echo/Say/rate").InUse)
	h.Release()
}

func TestReplacementNeedsHandoverAndInheritor(t *testing.T) {
	f := newRateFixture(t)
	g := f.enable(rateOnly("test.plainrate", 5))
	_, err := f.k.Update(g, rateOnly(quotaA, 5))
	p := problemsOf(t, err)
	require.Contains(t, p[0].Reason, "does not implement spi.Handover")
	f.update(rateOnly("test.plainrate", 6))
	_, err = f.k.Disable()
	require.NoError(t, err)
	g = f.enable(rateOnly(quotaA, 5))
	_, err = f.k.Update(g, rateOnly("test.plainrate", 5))
	p = problemsOf(t, err)
	require.Contains(t, p[0].Reason, "does not implement spi.Inheritor")
	require.Equal(t, g, f.k.Generation())
}
