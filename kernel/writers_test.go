package kernel_test

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/kernel"
	"github.com/sluicerpc/sluice/limiters/concurrency"
	"github.com/sluicerpc/sluice/spi"
)

// Seed 001's transactionality and writer-race matrix. Each race is forced
// with the AfterPrepare hook: the first writer pauses after preparing its
// candidate, outside every lock, while another writer runs to completion.

type writerRace struct {
	f      *fixture
	kind   *recordingKind
	paused chan struct{}
	resume chan struct{}
	armed  atomic.Bool // the next writer to finish prepare pauses
}

func newWriterRace(t *testing.T) *writerRace {
	reg := &spi.Registry{}
	kind := &recordingKind{name: "test.recording", failLimit: -1}
	reg.MustRegister(kind)
	var b kernel.CatalogBuilder
	f := &fixture{t: t, enqueued: make(chan *kernel.Permit, 16)}
	f.say = b.MustAdd("echo", "Say")
	f.shout = b.MustAdd("echo", "Shout")
	f.add = b.MustAdd("math", "Add")
	k, err := kernel.New(kernel.Config{Catalog: b.Build(), Registry: reg})
	require.NoError(t, err)
	f.k = k
	w := &writerRace{f: f, kind: kind, paused: make(chan struct{}), resume: make(chan struct{})}
	k.SetHooks(&kernel.Hooks{AfterPrepare: func() {
		if w.armed.CompareAndSwap(true, false) {
			close(w.paused)
			<-w.resume
		}
	}})
	return w
}

func (w *writerRace) global(limit int64) kernel.Options {
	return kernel.Options{Global: kernel.Rule{Limits: []spi.Spec{w.kind.spec(limit)}}}
}

// start runs op on a goroutine, waits until it paused after prepare, and
// returns a function that resumes it and returns its result.
func (w *writerRace) start(op func() (uint64, error)) func() (uint64, error) {
	type res struct {
		g   uint64
		err error
	}
	done := make(chan res, 1)
	w.armed.Store(true)
	go func() {
		g, err := op()
		done <- res{g, err}
	}()
	<-w.paused
	return func() (uint64, error) {
		close(w.resume)
		r := <-done
		return r.g, r.err
	}
}

func (w *writerRace) liveLimit() int64 {
	sc, _ := w.f.k.Stats().Scope("global/concurrency")
	return sc.Limit
}

// N has limit 10; candidate A wants 5, candidate B wants 20; B wins. The
// live limit is 20 and was never 5.
func TestLosingCandidateNeverCommits(t *testing.T) {
	w := newWriterRace(t)
	n, err := w.f.k.Enable(w.global(10))
	require.NoError(t, err)

	finishA := w.start(func() (uint64, error) { return w.f.k.Update(n, w.global(5)) })
	gb, err := w.f.k.Update(n, w.global(20))
	require.NoError(t, err)
	_, errA := finishA()

	require.ErrorIs(t, errA, kernel.ErrPublicationConflict)
	var pc *kernel.PublicationConflictError
	require.ErrorAs(t, errA, &pc)
	require.Equal(t, n, pc.Expected)
	require.Equal(t, gb, pc.Current)
	require.Equal(t, gb, w.f.k.Generation())
	require.EqualValues(t, 20, w.liveLimit())
	require.Equal(t, []int64{20}, w.kind.commits(), "the loser never touched the live limit")
	require.Equal(t, 1, w.f.k.Stats().States, "the loser's prepared state was never registered")
}

func TestUpdateLosesToDisable(t *testing.T) {
	w := newWriterRace(t)
	n, err := w.f.k.Enable(w.global(10))
	require.NoError(t, err)
	finish := w.start(func() (uint64, error) { return w.f.k.Update(n, w.global(5)) })
	d, err := w.f.k.Disable()
	require.NoError(t, err)
	_, err = finish()
	require.ErrorIs(t, err, kernel.ErrModeConflict)
	require.Equal(t, d, w.f.k.Generation())
	require.False(t, w.f.k.Enabled())
	require.Empty(t, w.kind.commits())
}

func TestUpdateLosesToSeal(t *testing.T) {
	w := newWriterRace(t)
	n, err := w.f.k.Enable(w.global(10))
	require.NoError(t, err)
	finish := w.start(func() (uint64, error) { return w.f.k.Update(n, w.global(50)) })
	w.f.k.Seal()
	_, err = finish()
	require.ErrorIs(t, err, kernel.ErrLifecycleClosed)
	require.Equal(t, kernel.LifecycleClosed, kernel.OutcomeOf(err))
	require.Equal(t, n, w.f.k.Generation())
	require.Empty(t, w.kind.commits())
	require.NoError(t, w.f.k.Drain(t.Context()))
}

func TestUpdateAcrossDisableEnableBoundaryConflicts(t *testing.T) {
	w := newWriterRace(t)
	n, err := w.f.k.Enable(w.global(10))
	require.NoError(t, err)
	finish := w.start(func() (uint64, error) { return w.f.k.Update(n, w.global(5)) })
	_, err = w.f.k.Disable()
	require.NoError(t, err)
	e, err := w.f.k.Enable(w.global(7))
	require.NoError(t, err)
	_, err = finish()
	require.ErrorIs(t, err, kernel.ErrPublicationConflict)
	require.Equal(t, e, w.f.k.Generation())
	require.EqualValues(t, 7, w.liveLimit())
	// An update derived from the current generation goes through.
	_, err = w.f.k.Update(e, w.global(8))
	require.NoError(t, err)
	require.EqualValues(t, 8, w.liveLimit())
}

func TestEnableRacesEnable(t *testing.T) {
	w := newWriterRace(t)
	finish := w.start(func() (uint64, error) { return w.f.k.Enable(w.global(5)) })
	g, err := w.f.k.Enable(w.global(9))
	require.NoError(t, err)
	_, err = finish()
	require.ErrorIs(t, err, kernel.ErrModeConflict)
	require.Equal(t, g, w.f.k.Generation())
	require.EqualValues(t, 9, w.liveLimit())
}

// A commit that fails half-way rolls back what it changed and publishes
// nothing.
func TestFailedCommitRollsBack(t *testing.T) {
	w := newWriterRace(t)
	w.kind.failLimit = 13
	opts := func(global, method int64) kernel.Options {
		o := w.global(global)
		o.Methods = map[string]kernel.Rule{echoSay: {Limits: []spi.Spec{w.kind.spec(method)}}}
		return o
	}
	n, err := w.f.k.Enable(opts(10, 4))
	require.NoError(t, err)
	_, err = w.f.k.Update(n, opts(20, 13)) // global commits, then the method fails
	problems := problemsOf(t, err)
	require.Len(t, problems, 1)
	require.Equal(t, `Methods["echo/Say"].Limits[0]`, problems[0].Field)
	require.Contains(t, problems[0].Reason, "injected commit failure")
	require.Equal(t, n, w.f.k.Generation())
	require.EqualValues(t, 10, w.liveLimit(), "rolled back")
	require.Equal(t, []int64{20, 10}, w.kind.commits())
	sc, _ := w.f.k.Stats().Scope("method:echo/Say/concurrency")
	require.EqualValues(t, 4, sc.Limit)
}

// Replacing the kind of a live concurrency state is accepted: the new
// state counts the old state's holders as occupied until they release, so
// the accounting is never split (succession.go).
func TestConcurrencyKindReplacementCountsOldHolders(t *testing.T) {
	w := newWriterRace(t)
	w.f.k = mustKernelWith(t, w.kind)
	_, err := w.f.k.Enable(w.global(3))
	require.NoError(t, err)
	h1, h2, h3 := w.f.grant(w.f.say), w.f.grant(w.f.say), w.f.grant(w.f.say)
	w.f.update(globalOnly(2)) // built-in kind, limit 2, 3 old holders
	w.f.refused(w.f.say, kernel.ReasonConcurrency)
	h1.Release()
	w.f.refused(w.f.say, kernel.ReasonConcurrency) // 2 carried, limit 2
	h2.Release()
	n1 := w.f.grant(w.f.say)
	w.f.refused(w.f.say, kernel.ReasonConcurrency)
	h3.Release()
	n2 := w.f.grant(w.f.say)
	w.f.refused(w.f.say, kernel.ReasonConcurrency)
	n1.Release()
	n2.Release()
	w.f.requireIdle()
	st := w.f.k.Stats()
	require.Equal(t, 1, st.States, "the old state is reclaimed once its holders left")
	require.Equal(t, "concurrency", st.Scopes[0].Kind)
}

func mustKernelWith(t *testing.T, kinds ...spi.LimiterKind) *kernel.Kernel {
	reg := &spi.Registry{}
	reg.MustRegister(concurrency.Kind{})
	for _, k := range kinds {
		reg.MustRegister(k)
	}
	var b kernel.CatalogBuilder
	b.MustAdd("echo", "Say")
	b.MustAdd("echo", "Shout")
	b.MustAdd("math", "Add")
	k, err := kernel.New(kernel.Config{Catalog: b.Build(), Registry: reg})
	require.NoError(t, err)
	return k
}

// Many writers race from the same generation: exactly one wins each round.
func TestConcurrentUpdatesExactlyOneWins(t *testing.T) {
	f := newFixture(t)
	f.k.SetHooks(nil)
	f.enable(globalOnly(1))
	for round := range 50 {
		from := f.k.Generation()
		var wg sync.WaitGroup
		results := make([]error, 8)
		for i := range results {
			wg.Go(func() { _, results[i] = f.k.Update(from, globalOnly(int64(round*10+i+1))) })
		}
		wg.Wait()
		wins := 0
		for _, err := range results {
			if err == nil {
				wins++
			} else {
				require.ErrorIs(t, err, kernel.ErrPublicationConflict)
			}
		}
		require.Equal(t, 1, wins)
		require.Equal(t, from+1, f.k.Generation())
	}
}
