package kernel_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/kernel"
	"github.com/sluicerpc/sluice/limiters/tokenbucket"
	"github.com/sluicerpc/sluice/limiters/window"
	"github.com/sluicerpc/sluice/spi"
)

// Seed 000 section E through the kernel, with the built-in rate kinds and
// an explicit clock: parameter changes never hand out a free burst,
// unchanged rate state survives other changes (seed 001), algorithm
// replacement carries usage, and the new policy takes effect.

// newClockedFixture is newFixture over spi.DefaultRegistry (every built-in
// kind) with an explicit clock.
func newClockedFixture(t testing.TB) *partFixture {
	t.Helper()
	clock := newManualClock()
	var b kernel.CatalogBuilder
	f := &fixture{t: t, enqueued: make(chan *kernel.Permit, 1024)}
	f.say = b.MustAdd("echo", "Say")
	f.shout = b.MustAdd("echo", "Shout")
	f.add = b.MustAdd("math", "Add")
	k, err := kernel.New(kernel.Config{Catalog: b.Build(), Clock: clock})
	require.NoError(t, err)
	f.k = k
	k.SetHooks(&kernel.Hooks{AfterEnqueue: func(p *kernel.Permit) { f.enqueued <- p }})
	return &partFixture{fixture: f, clock: clock}
}

func globalRate(s spi.Spec) kernel.Options {
	return kernel.Options{Global: kernel.Rule{Limits: []spi.Spec{s}}}
}

// admitted counts how many requests are granted now, trying up to max.
func (f *partFixture) admitted(max int) int {
	f.t.Helper()
	n := 0
	for range max {
		p, err := f.admit(f.say)
		if err != nil {
			requireReason(f.t, err, kernel.ReasonRate)
			break
		}
		p.Release()
		n++
	}
	return n
}

func TestTokenBucketUpdateGrantsNoFreeBurst(t *testing.T) {
	f := newClockedFixture(t)
	f.enable(globalRate(tokenbucket.Spec(10, 10, time.Second)))
	require.Equal(t, 10, f.admitted(100))
	// Raising capacity and rate: the bucket stays empty (no refill at
	// publication), and the new cadence starts one full period later.
	f.clock.Advance(900 * time.Millisecond)
	f.update(globalRate(tokenbucket.Spec(20, 20, time.Second)))
	require.Zero(t, f.admitted(100))
	f.clock.Advance(999 * time.Millisecond)
	require.Zero(t, f.admitted(100))
	f.clock.Advance(time.Millisecond)
	require.Equal(t, 20, f.admitted(100), "the new policy takes effect")
	// Lowering capacity clamps the tokens.
	f.clock.Advance(time.Second) // full again: 20
	f.update(globalRate(tokenbucket.Spec(5, 20, time.Second)))
	require.Equal(t, 5, f.admitted(100))
}

func TestFixedWindowUpdateKeepsTheWindow(t *testing.T) {
	f := newClockedFixture(t)
	f.enable(globalRate(window.FixedSpec(10, time.Second)))
	f.clock.Advance(400 * time.Millisecond)
	require.Equal(t, 7, f.admitted(7))
	f.update(globalRate(window.FixedSpec(5, time.Second)))
	require.Zero(t, f.admitted(100), "7 used >= 5: nothing until the window ends")
	f.update(globalRate(window.FixedSpec(20, time.Second)))
	require.Equal(t, 13, f.admitted(100), "a limit change does not open a new window")
	f.clock.Advance(600 * time.Millisecond)
	require.Equal(t, 20, f.admitted(100), "the next window")
}

func TestSlidingWindowUpdateKeepsTheSegments(t *testing.T) {
	f := newClockedFixture(t)
	f.enable(globalRate(window.SlidingSpec(10, time.Second, 4)))
	require.Equal(t, 10, f.admitted(100))
	f.update(globalRate(window.SlidingSpec(20, time.Second, 4)))
	require.Equal(t, 10, f.admitted(100), "usage inside the window carries over")
	// A window change cannot be mapped: the usage becomes a barrier.
	f.update(globalRate(window.SlidingSpec(20, 2*time.Second, 4)))
	require.Zero(t, f.admitted(100))
	f.clock.Advance(time.Second)
	require.Zero(t, f.admitted(100), "the barrier outlives the old window")
}

// Seed 001: a concurrency or queue change elsewhere leaves rate state
// untouched, for every algorithm.
func TestUnchangedRateSurvivesOtherChanges(t *testing.T) {
	for name, spec := range map[string]spi.Spec{
		"tokenbucket":   tokenbucket.Spec(5, 5, time.Second),
		"fixedwindow":   window.FixedSpec(5, time.Second),
		"slidingwindow": window.SlidingSpec(5, time.Second, 4),
	} {
		t.Run(name, func(t *testing.T) {
			f := newClockedFixture(t)
			o := kernel.Options{Global: kernel.Rule{Limits: []spi.Spec{spec}}}
			f.enable(o)
			require.Equal(t, 5, f.admitted(100))
			o.Methods = map[string]kernel.Rule{echoSay: conc(3)}
			f.update(o)
			o = withQueue(o, 4, 1024, time.Second)
			f.update(o)
			o.Methods, o.Queue = nil, kernel.QueuePolicy{}
			f.update(o)
			require.Zero(t, f.admitted(100), "no free burst, no fresh window")
			require.Len(t, f.k.Stats().Scopes, 1)
		})
	}
}

// Replacing the algorithm keeps the old usage as a barrier in the new one.
func TestAlgorithmReplacementWithBuiltins(t *testing.T) {
	f := newClockedFixture(t)
	f.enable(globalRate(tokenbucket.Spec(10, 10, time.Second)))
	require.Equal(t, 7, f.admitted(7))
	f.update(globalRate(window.SlidingSpec(10, time.Second, 4)))
	require.Equal(t, 3, f.admitted(100))
	f.update(globalRate(window.FixedSpec(10, time.Second)))
	require.Zero(t, f.admitted(100))
	f.clock.Advance(2 * time.Second)
	require.Equal(t, 10, f.admitted(100), "the new policy takes effect")
	sc := f.scope("global/rate")
	require.Equal(t, window.FixedKindName, sc.Kind)
}

// A waiter queued on a token bucket before an update is granted once, from
// the reconfigured bucket, when tokens come back: its retained lease is not
// consumed twice, and the grant wakes at the bucket's own retry hint.
func TestQueuedRateWaiterAcrossUpdate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t) // system clock: fake inside the bubble
		q := func(s spi.Spec) kernel.Options { return withQueue(globalRate(s), 8, 1024, time.Minute) }
		f.enable(q(tokenbucket.Spec(2, 1, time.Second)))
		f.grant(f.say).Release()
		f.grant(f.say).Release()
		start := time.Now()
		w := f.queue(context.Background(), kernel.Request{Method: f.say})
		f.update(q(tokenbucket.Spec(4, 1, time.Second))) // no refill at publication
		require.NoError(t, w.result(t))
		require.Equal(t, time.Second, time.Since(start), "granted at the first replenishment")
		w.p.Release()
		sc := f.scope("global/rate")
		require.EqualValues(t, 4, sc.InUse, "one token came back and was taken once")
	})
}
