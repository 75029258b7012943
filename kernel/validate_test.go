package kernel_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/kernel"
	"github.com/sluicerpc/sluice/limiters/concurrency"
	"github.com/sluicerpc/sluice/spi"
)

// fixedRate is a minimal rate kind for validation tests: "per" grants per
// instant, with no state worth modelling.
type fixedRateKind struct{}

func (fixedRateKind) Name() string     { return "test.fixedrate" }
func (fixedRateKind) Class() spi.Class { return spi.ClassRate }
func (fixedRateKind) Validate(p spi.Params) error {
	if v, ok := p["per"]; !ok || v < 1 {
		return spi.InvalidParam("per", "must be at least 1")
	}
	return nil
}
func (fixedRateKind) New(p spi.Params, _ time.Time) (spi.Limiter, error) {
	return concurrency.New(p["per"]), nil
}

func problemsOf(t *testing.T, err error) []kernel.Problem {
	t.Helper()
	require.ErrorIs(t, err, kernel.ErrCandidateRejected)
	var ce *kernel.CandidateError
	require.True(t, errors.As(err, &ce))
	require.Equal(t, kernel.CandidateRejected, kernel.OutcomeOf(err))
	return ce.Problems
}

func TestCandidateValidationNamesTheField(t *testing.T) {
	reg := &spi.Registry{}
	reg.MustRegister(concurrency.Kind{})
	reg.MustRegister(fixedRateKind{})
	var b kernel.CatalogBuilder
	b.MustAdd("echo", "Say")
	k, err := kernel.New(kernel.Config{Catalog: b.Build(), Registry: reg})
	require.NoError(t, err)

	rate := spi.Spec{Kind: "test.fixedrate", Params: spi.Params{"per": 5}}
	cases := []struct {
		name string
		opts kernel.Options
		want []kernel.Problem
	}{{
		name: "no limit at all",
		opts: kernel.Options{},
		want: []kernel.Problem{{Field: "Options", Reason: "at least one limit is required (use Disable to turn admission off)"}},
	}, {
		name: "unknown service and method",
		opts: kernel.Options{Global: conc(1),
			Services: map[string]kernel.Rule{"nope": conc(1)},
			Methods:  map[string]kernel.Rule{"echo/Nope": conc(1), "Say": conc(1)}},
		want: []kernel.Problem{
			{Field: `Methods["Say"]`, Reason: `unknown method (want "service/method" registered in the catalog)`},
			{Field: `Methods["echo/Nope"]`, Reason: `unknown method (want "service/method" registered in the catalog)`},
			{Field: `Services["nope"]`, Reason: "unknown service"},
		},
	}, {
		name: "empty rule",
		opts: kernel.Options{Global: conc(1), Methods: map[string]kernel.Rule{"echo/Say": {}}},
		want: []kernel.Problem{{Field: `Methods["echo/Say"].Limits`, Reason: "a rule must have at least one limit"}},
	}, {
		name: "bad parameter",
		opts: kernel.Options{Global: conc(0)},
		want: []kernel.Problem{{Field: "Global.Limits[0].limit", Reason: "must be between 1 and 2147483647, got 0"}},
	}, {
		name: "unknown parameter",
		opts: kernel.Options{Global: kernel.Rule{Limits: []spi.Spec{{Kind: "concurrency", Params: spi.Params{"limit": 1, "burst": 2}}}}},
		want: []kernel.Problem{{Field: "Global.Limits[0].burst", Reason: `unknown parameter for kind "concurrency" (want only "limit")`}},
	}, {
		name: "unknown kind",
		opts: kernel.Options{Global: kernel.Rule{Limits: []spi.Spec{{Kind: "magic"}}}},
		want: []kernel.Problem{{Field: "Global.Limits[0].Kind", Reason: `unknown limiter kind "magic" (registered: concurrency, test.fixedrate)`}},
	}, {
		name: "two limits of one class",
		opts: kernel.Options{Services: map[string]kernel.Rule{"echo": {Limits: []spi.Spec{concurrency.Spec(1), rate, concurrency.Spec(2), rate}}}},
		want: []kernel.Problem{
			{Field: `Services["echo"].Limits[2]`, Reason: `a rule has at most one concurrency limit; Services["echo"] is already concurrency{limit=1}`},
			{Field: `Services["echo"].Limits[3]`, Reason: `a rule has at most one rate limit; Services["echo"] is already test.fixedrate{per=5}`},
		},
	}, {
		name: "queue bounds mixed",
		opts: kernel.Options{Global: conc(1), Queue: kernel.QueuePolicy{MaxQueuedCalls: 1}},
		want: []kernel.Problem{{Field: "Queue", Reason: "MaxQueuedCalls, MaxQueuedBytes and MaxQueueDelay must be all zero (no waiting) or all positive"}},
	}, {
		name: "queue bounds negative",
		opts: kernel.Options{Global: conc(1), Queue: kernel.QueuePolicy{MaxQueuedCalls: -1, MaxQueuedBytes: -1, MaxQueueDelay: -1}},
		want: []kernel.Problem{
			{Field: "Queue.MaxQueueDelay", Reason: "must not be negative"},
			{Field: "Queue.MaxQueuedBytes", Reason: "must not be negative"},
			{Field: "Queue.MaxQueuedCalls", Reason: "must not be negative"},
		},
	}, {
		name: "one-way queueing without a queue",
		opts: kernel.Options{Global: conc(1), Queue: kernel.QueuePolicy{QueueOneWayCalls: true}},
		want: []kernel.Problem{{Field: "Queue.QueueOneWayCalls", Reason: "requires queueing (MaxQueuedCalls, MaxQueuedBytes and MaxQueueDelay positive)"}},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := k.Enable(tc.opts)
			require.Equal(t, tc.want, problemsOf(t, err))
			require.Zero(t, k.Generation(), "a rejected candidate publishes nothing")
			require.False(t, k.Enabled())
			require.Zero(t, k.Stats().States, "a rejected candidate creates no state")
		})
	}

	// A valid rule with both classes is accepted.
	g, err := k.Enable(kernel.Options{Global: kernel.Rule{Limits: []spi.Spec{concurrency.Spec(3), rate}}})
	require.NoError(t, err)
	require.Equal(t, uint64(1), g)
}

// An invalid Update leaves the current program and its state untouched.
func TestInvalidUpdateChangesNothing(t *testing.T) {
	f := newFixture(t)
	g := f.enable(globalOnly(2))
	held := f.grant(f.say)
	_, err := f.k.Update(g, kernel.Options{Global: conc(5), Methods: map[string]kernel.Rule{"echo/Nope": conc(1)}})
	problemsOf(t, err)
	require.Equal(t, g, f.k.Generation())
	require.EqualValues(t, 2, f.scope("global/concurrency").Limit)
	require.EqualValues(t, 1, f.scope("global/concurrency").InUse)
	second := f.grant(f.add)
	f.refused(f.shout, kernel.ReasonConcurrency)
	held.Release()
	second.Release()
	f.requireIdle()
}

// The caller's Options are copied: changing them afterwards changes nothing.
func TestOptionsAreCopied(t *testing.T) {
	f := newFixture(t)
	o := kernel.Options{Global: conc(1), Methods: map[string]kernel.Rule{echoSay: conc(1)}}
	f.enable(o)
	o.Global.Limits[0].Params["limit"] = 100
	o.Methods[echoSay] = conc(100)
	a := f.grant(f.add)
	f.refused(f.say, kernel.ReasonConcurrency)
	a.Release()
}
