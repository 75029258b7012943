package kernel_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/kernel"
	"github.com/sluicerpc/sluice/limiters/concurrency"
	"github.com/sluicerpc/sluice/spi"
)

// hookedConcKind is the built-in concurrency limiter under another kind
// name, whose TryAcquire first runs a test's hook (once): the instant
// between the kernel's look at a state and its grant there.
type hookedConcKind struct{ before *func() }

func (hookedConcKind) Name() string                { return "example.com/hooked" }
func (hookedConcKind) Class() spi.Class            { return spi.ClassConcurrency }
func (hookedConcKind) Validate(p spi.Params) error { return concurrency.Kind{}.Validate(p) }
func (k hookedConcKind) New(p spi.Params, now time.Time) (spi.Limiter, error) {
	l, err := concurrency.Kind{}.New(p, now)
	return &hookedConc{Limiter: l, before: k.before}, err
}

type hookedConc struct {
	spi.Limiter
	before *func()
}

func (l *hookedConc) TryAcquire(now time.Time, n int64) spi.Decision {
	if f := *l.before; f != nil {
		*l.before = nil
		f()
	}
	return l.Limiter.TryAcquire(now, n)
}

// A request that found a scope's state unreplaced, and is granted there
// just after a configuration replaced the state's kind (and the new state
// counted the old one's holders without it), gives the unit back and
// takes it on the new state: under limit 1 nobody else gets in.
func TestGrantOnAStateReplacedMeanwhileMovesToItsSuccessor(t *testing.T) {
	var before func()
	k := mustKernelWith(t, hookedConcKind{before: &before})
	spec := spi.Spec{Kind: "example.com/hooked", Params: spi.Params{concurrency.ParamLimit: 1}}
	_, err := k.Enable(kernel.Options{Global: kernel.Rule{Limits: []spi.Spec{spec}}})
	require.NoError(t, err)
	say, ok := k.Catalog().Lookup(echoSay)
	require.True(t, ok)

	var p kernel.Permit
	require.True(t, k.Capture(&p))
	before = func() { // the kind is replaced inside the request's TryAcquire
		_, err := k.Update(k.Generation(), kernel.Options{Global: kernel.Rule{Limits: []spi.Spec{concurrency.Spec(1)}}})
		require.NoError(t, err)
	}
	require.NoError(t, p.Admit(t.Context(), kernel.Request{Method: say}))
	require.Nil(t, before, "the hook ran")

	var q kernel.Permit
	require.True(t, k.Capture(&q))
	err = q.Admit(t.Context(), kernel.Request{Method: say})
	require.Error(t, err, "two holders under limit 1")
	q.Release()
	p.Release()
	require.True(t, k.Capture(&q))
	require.NoError(t, q.Admit(t.Context(), kernel.Request{Method: say}))
	q.Release()
}

// Requests of the old program granted on the old state inside a handover
// (after the link, before the successor has computed what it carries)
// bounce to the successor, and are refused there: the successor admits
// nothing until it knows its carry. Under a constant limit of 2 with one
// holder on the old kind, two such requests were both granted on the
// successor's empty limiter, which then owed the holder's unit instead:
// three holders under a limit of 2 (issue 24 section 1).
func TestRequestsBouncedInsideTheHandoverAreNotGrantedOnTheCarry(t *testing.T) {
	var before func()
	k := mustKernelWith(t, hookedConcKind{before: &before})
	hooked := spi.Spec{Kind: "example.com/hooked", Params: spi.Params{concurrency.ParamLimit: 2}}
	_, err := k.Enable(kernel.Options{Global: kernel.Rule{Limits: []spi.Spec{hooked}}})
	require.NoError(t, err)
	say, ok := k.Catalog().Lookup(echoSay)
	require.True(t, ok)

	var holder kernel.Permit
	require.True(t, k.Capture(&holder))
	require.NoError(t, holder.Admit(t.Context(), kernel.Request{Method: say}))
	// Two requests of the old program, admitted inside the handover.
	var bounced [2]kernel.Permit
	for i := range bounced {
		require.True(t, k.Capture(&bounced[i]))
	}
	var errs [2]error
	kernel.SetAfterLinkHook(func() {
		for i := range bounced {
			errs[i] = bounced[i].Admit(t.Context(), kernel.Request{Method: say})
		}
	})
	defer kernel.SetAfterLinkHook(nil)
	_, err = k.Update(k.Generation(), kernel.Options{Global: kernel.Rule{Limits: []spi.Spec{concurrency.Spec(2)}}})
	require.NoError(t, err)
	kernel.SetAfterLinkHook(nil)

	granted := 0
	for i := range bounced {
		if errs[i] == nil {
			granted++
		}
	}
	// The holder and at most one other: the successor's limit is 2.
	require.LessOrEqual(t, 1+granted, 2, "holders under a limit of 2: %v", errs)
	for i := range bounced {
		bounced[i].Release()
	}

	// The carry is exact once the handover is done: one more fits beside
	// the holder, a second does not; after the holder leaves, two fit.
	var p, q kernel.Permit
	require.True(t, k.Capture(&p))
	require.NoError(t, p.Admit(t.Context(), kernel.Request{Method: say}))
	require.True(t, k.Capture(&q))
	require.Error(t, q.Admit(t.Context(), kernel.Request{Method: say}), "three holders under a limit of 2")
	holder.Release()
	require.True(t, k.Capture(&q))
	require.NoError(t, q.Admit(t.Context(), kernel.Request{Method: say}))
	p.Release()
	q.Release()
}
