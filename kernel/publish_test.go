package kernel_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/kernel"
)

// Publish is compare-and-publish on every transition: disabled -> enabled,
// enabled -> enabled, enabled -> disabled and disabled -> disabled each need
// the current generation and each make a new one.
func TestPublishComparesOnEveryTransition(t *testing.T) {
	f := newFixture(t)
	o := globalOnly(1)
	stale := func(expected uint64, o *kernel.Options) {
		t.Helper()
		before, enabled := f.k.Generation(), f.k.Enabled()
		g, err := f.k.Publish(expected, o)
		var pc *kernel.PublicationConflictError
		require.ErrorAs(t, err, &pc)
		assert.Equal(t, kernel.PublicationConflictError{Expected: expected, Current: before}, *pc)
		assert.Equal(t, before, g)
		assert.Equal(t, before, f.k.Generation(), "a losing candidate takes no generation")
		assert.Equal(t, enabled, f.k.Enabled())
	}
	stale(1, &o) // disabled, generation 0: an Enable from a generation that never was
	g, err := f.k.Publish(0, &o)
	require.NoError(t, err)
	assert.Equal(t, uint64(1), g)
	p := f.grant(f.say)
	f.refused(f.say, kernel.ReasonConcurrency)

	stale(0, nil)
	two := globalOnly(2)
	stale(0, &two)
	g, err = f.k.Publish(1, &two) // an Update
	require.NoError(t, err)
	assert.Equal(t, uint64(2), g)
	q := f.grant(f.say) // the resize to 2 admits one more, on the same state

	g, err = f.k.Publish(2, nil) // a Disable
	require.NoError(t, err)
	assert.Equal(t, uint64(3), g)
	assert.False(t, f.k.Enabled())
	none, err := f.admit(f.say)
	require.NoError(t, err)
	assert.Nil(t, none, "disabled: new requests bypass admission")

	g, err = f.k.Publish(3, nil) // disabled -> disabled still names a new configuration
	require.NoError(t, err)
	assert.Equal(t, uint64(4), g)
	stale(3, &two)

	g, err = f.k.Publish(4, &two) // an Enable: it binds the state the holders still occupy
	require.NoError(t, err)
	assert.Equal(t, uint64(5), g)
	f.refused(f.say, kernel.ReasonConcurrency)
	p.Release()
	q.Release()
	f.grant(f.say).Release()
}

func TestPublishRejectsWhatUpdateRejects(t *testing.T) {
	f := newFixture(t)
	bad := kernel.Options{Methods: map[string]kernel.Rule{"echo/Nope": conc(1)}}
	_, want := f.k.Enable(bad)
	require.Error(t, want)
	_, err := f.k.Publish(0, &bad)
	require.Error(t, err)
	assert.Equal(t, want.Error(), err.Error())
	assert.Equal(t, uint64(0), f.k.Generation())
	_, err = f.k.PlanPublish(0, &bad)
	require.Error(t, err)
	assert.Equal(t, want.Error(), err.Error())
}

func TestPublishAfterSeal(t *testing.T) {
	f := newFixture(t)
	f.k.Seal()
	o := globalOnly(1)
	for _, c := range []*kernel.Options{nil, &o} {
		_, err := f.k.Publish(0, c)
		assert.True(t, errors.Is(err, kernel.ErrLifecycleClosed), "%v", err)
		_, err = f.k.PlanPublish(0, c)
		assert.True(t, errors.Is(err, kernel.ErrLifecycleClosed), "%v", err)
	}
}

// PlanPublish checks the generation in both modes (Plan does not while
// disabled), and the plan of a nil candidate retires what the current
// program binds, with its holders and waiters, then Publish does it.
func TestPlanPublish(t *testing.T) {
	f := newFixture(t)
	o := withQueue(globalOnly(1), 4, 1024, 0)
	o.Queue.MaxQueueDelay = 1 << 40
	_, err := f.k.PlanPublish(7, &o)
	require.ErrorIs(t, err, kernel.ErrPublicationConflict)
	_, err = f.k.Plan(7, o)
	require.NoError(t, err, "Plan while disabled is an Enable, whatever expected")

	plan, err := f.k.PlanPublish(0, nil)
	require.NoError(t, err)
	assert.Equal(t, &kernel.Plan{Generation: 0, Disable: true}, plan, "disabled -> disabled retires nothing")

	plan, err = f.k.PlanPublish(0, &o)
	require.NoError(t, err)
	assert.True(t, plan.Enable)
	gen := f.enable(o)
	p := f.grant(f.say)

	stats := f.k.Stats()
	plan, err = f.k.PlanPublish(gen, nil)
	require.NoError(t, err)
	assert.Equal(t, stats, f.k.Stats(), "a plan changes nothing")
	assert.True(t, plan.Disable)
	require.Len(t, plan.States, 1)
	g := plan.States[0]
	assert.Equal(t, kernel.PlanRetire, g.Action)
	assert.Equal(t, "global/concurrency", g.Name)
	assert.Equal(t, int64(1), g.InUse)
	assert.Equal(t, "retired: new requests no longer take it; its 1 holders and 0 waiters finish under the programs they captured", g.Effect)
	assert.Equal(t, []string{"no queue for new requests (MaxQueuedCalls was 4); requests already queued wait under the program they captured"}, plan.Queue)

	_, err = f.k.Publish(gen, nil)
	require.NoError(t, err)
	none, err := f.admit(f.say)
	require.NoError(t, err)
	assert.Nil(t, none)
	assert.Equal(t, int64(1), f.scope("global/concurrency").InUse, "the holder finishes under the program it captured")
	p.Release()
}

// Two writers derived from the same generation race: exactly one
// publishes, the other changes nothing, whatever the transitions (an
// update against a disable, two enables).
func TestConcurrentPublishersFromOneGenerationOneWins(t *testing.T) {
	f := newFixture(t)
	five, twenty := globalOnly(5), globalOnly(20)
	for i := range 200 {
		gen := f.k.Generation()
		cands := [2]*kernel.Options{&five, &twenty}
		if i%3 == 1 {
			cands[0] = nil
		}
		var errs [2]error
		var gens [2]uint64
		done := make(chan int, 2)
		for w := range 2 {
			go func() {
				gens[w], errs[w] = f.k.Publish(gen, cands[w])
				done <- w
			}()
		}
		<-done
		<-done
		won := -1
		for w := range 2 {
			if errs[w] == nil {
				require.Equal(t, -1, won, "both publishers won from generation %d", gen)
				won = w
				continue
			}
			require.ErrorIs(t, errs[w], kernel.ErrPublicationConflict)
		}
		require.NotEqual(t, -1, won, "nobody won")
		require.Equal(t, gen+1, f.k.Generation())
		require.Equal(t, gen+1, gens[won])
		require.Equal(t, cands[won] != nil, f.k.Enabled())
		if cands[won] != nil {
			assert.Equal(t, cands[won].Global.Limits[0].Params["limit"], f.scope("global/concurrency").Limit)
		}
	}
}

// A shrink the holders fit under says how many more may enter; one they
// do not fit under says that they finish and nobody new enters.
func TestPlanOfAShrink(t *testing.T) {
	f := newFixture(t)
	gen := f.enable(globalOnly(4))
	p := f.grant(f.say)
	plan, err := f.k.PlanPublish(gen, ptr(globalOnly(2)))
	require.NoError(t, err)
	assert.Equal(t, "limit 4 -> 2 with 1 active: nobody is evicted; 1 more may enter now", plan.States[0].Effect)
	q := f.grant(f.say)
	plan, err = f.k.PlanPublish(gen, ptr(globalOnly(2)))
	require.NoError(t, err)
	assert.Equal(t, "limit 4 -> 2 with 2 active: all 2 finish, nobody is evicted; nobody new enters until fewer than 2 are active", plan.States[0].Effect)
	p.Release()
	q.Release()
}

func ptr[T any](v T) *T { return &v }
