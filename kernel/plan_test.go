package kernel_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/kernel"
	"github.com/sluicerpc/sluice/limiters/tokenbucket"
	"github.com/sluicerpc/sluice/limiters/window"
	"github.com/sluicerpc/sluice/spi"
)

func planByName(p *kernel.Plan) map[string]kernel.StatePlan {
	m := map[string]kernel.StatePlan{}
	for _, sp := range p.States {
		m[sp.Name] = sp
	}
	return m
}

// TestPlanMatchesTheUpdate: a plan computed for a candidate that resizes,
// replaces an algorithm, keeps, adds and removes rules says what the
// Update of the same candidate then does, and publishing nothing in
// between it changed nothing itself.
func TestPlanMatchesTheUpdate(t *testing.T) {
	f := newFixture(t)
	before := kernel.Options{
		Global: conc(3),
		Methods: map[string]kernel.Rule{
			echoSay:   {Limits: []spi.Spec{tokenbucket.Spec(100, 100, time.Hour)}},
			mathAdd:   conc(2),
			echoShout: {Limits: []spi.Spec{tokenbucket.Spec(7, 7, time.Hour)}},
		},
		Queue: kernel.QueuePolicy{MaxQueuedCalls: 8, MaxQueuedBytes: 1024, MaxQueueDelay: time.Minute},
	}
	gen := f.enable(before)
	a, b := f.grant(f.say), f.grant(f.add)
	after := kernel.Options{
		Global: conc(5), // grown, with 2 active
		Methods: map[string]kernel.Rule{
			echoSay:   {Limits: []spi.Spec{window.FixedSpec(50, time.Hour)}},   // algorithm replaced
			echoShout: {Limits: []spi.Spec{tokenbucket.Spec(7, 7, time.Hour)}}, // kept
			// math/Add removed
		},
		Queue: kernel.QueuePolicy{MaxQueuedCalls: 4, MaxQueuedBytes: 1024, MaxQueueDelay: time.Second},
	}
	statsBefore := f.k.Stats()
	plan, err := f.k.Plan(gen, after)
	require.NoError(t, err)
	assert.Equal(t, gen, plan.Generation)
	assert.False(t, plan.Enable)
	// The plan changed nothing.
	assert.Equal(t, statsBefore, f.k.Stats())
	assert.Equal(t, gen, f.k.Generation())

	sp := planByName(plan)
	g := sp["global/concurrency"]
	assert.Equal(t, kernel.PlanReconfigure, g.Action)
	assert.Equal(t, int64(3), g.OldLimit)
	assert.Equal(t, int64(5), g.NewLimit)
	assert.Equal(t, int64(2), g.InUse)
	assert.Equal(t, "limit 3 -> 5 with 2 active: 3 more may enter now; 0 waiters are woken in FIFO order first", g.Effect)
	say := sp["method:echo/Say/rate"]
	assert.Equal(t, kernel.PlanHandover, say.Action)
	assert.Equal(t, tokenbucket.KindName, say.OldKind)
	assert.Equal(t, window.FixedKindName, say.Kind)
	assert.Equal(t, int64(1), say.InUse, "the token a took")
	assert.Equal(t, kernel.PlanReuse, sp["method:echo/Shout/rate"].Action)
	add := sp["method:math/Add/concurrency"]
	assert.Equal(t, kernel.PlanRetire, add.Action)
	assert.Equal(t, int64(1), add.InUse)
	assert.Len(t, plan.States, 4)
	assert.Len(t, plan.Queue, 2, "%q", plan.Queue)

	// The Update does what the plan said.
	_, err = f.k.Update(gen, after)
	require.NoError(t, err)
	scopes := map[string][]kernel.ScopeStats{}
	for _, sc := range f.k.Stats().Scopes {
		scopes[sc.Name] = append(scopes[sc.Name], sc)
	}
	newest := func(name string) kernel.ScopeStats {
		s := scopes[name]
		require.NotEmpty(t, s, name)
		return s[len(s)-1]
	}
	assert.Equal(t, g.NewLimit, newest("global/concurrency").Limit)
	assert.Len(t, scopes["global/concurrency"], 1, "reconfigured in place: one state")
	assert.Len(t, scopes["method:echo/Say/rate"], 2, "handed over: the old lineage and the new one")
	assert.Equal(t, window.FixedKindName, newest("method:echo/Say/rate").Kind)
	assert.Len(t, scopes["method:echo/Shout/rate"], 1, "reused")
	// The retired state is bound by the old program only, which a and b
	// keep alive.
	assert.Equal(t, int64(1), newest("method:math/Add/concurrency").Programs)
	a.Release()
	b.Release()
	// (The rate states keep the quota a took: an hour's refill.)
	for _, sc := range f.k.Stats().Scopes {
		if sc.Kind == "concurrency" {
			assert.Zero(t, sc.InUse, sc.Name)
		}
	}
}

// TestPlanRejectsWhatUpdateRejects: a stale generation, an invalid
// candidate and a sealed kernel return Update's errors, and change nothing.
func TestPlanRejectsWhatUpdateRejects(t *testing.T) {
	f := newFixture(t)
	gen := f.enable(globalOnly(2))
	_, err := f.k.Plan(gen+1, globalOnly(3))
	var conflict *kernel.PublicationConflictError
	require.True(t, errors.As(err, &conflict), "%v", err)
	_, err = f.k.Plan(gen, globalOnly(0))
	require.ErrorIs(t, err, kernel.ErrCandidateRejected)
	_, uerr := f.k.Update(gen, globalOnly(0))
	assert.Equal(t, uerr.Error(), err.Error(), "the same problems as Update")
	assert.Equal(t, gen, f.k.Generation())
	f.k.Seal()
	_, err = f.k.Plan(gen, globalOnly(3))
	require.ErrorIs(t, err, kernel.ErrLifecycleClosed)
}

// TestPlanWhileDisabledIsAnEnable: every state is created (or reused:
// a disabled kernel keeps the states holders still occupy).
func TestPlanWhileDisabledIsAnEnable(t *testing.T) {
	f := newFixture(t)
	plan, err := f.k.Plan(0, globalOnly(2))
	require.NoError(t, err)
	assert.True(t, plan.Enable)
	require.Len(t, plan.States, 1)
	assert.Equal(t, kernel.PlanCreate, plan.States[0].Action)
	assert.Equal(t, int64(2), plan.States[0].NewLimit)
	// Limit 2, 2 holders, Disable: an Enable with limit 2 reuses the
	// state its holders still occupy.
	f.enable(globalOnly(2))
	a, b := f.grant(f.say), f.grant(f.add)
	_, err = f.k.Disable()
	require.NoError(t, err)
	plan, err = f.k.Plan(0, globalOnly(2))
	require.NoError(t, err)
	require.Len(t, plan.States, 1)
	assert.Equal(t, kernel.PlanReuse, plan.States[0].Action)
	assert.Equal(t, int64(2), plan.States[0].InUse)
	a.Release()
	b.Release()
}
