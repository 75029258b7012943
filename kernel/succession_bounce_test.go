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
