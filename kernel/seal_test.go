package kernel_test

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/kernel"
)

// Seed 000 section J: cancellation, deadlines and Stop (Seal + Drain).

func TestSealEndsWaitersLetsHoldersFinishAndDrainsOnce(t *testing.T) {
	f := newFixture(t)
	f.enable(withQueue(globalOnly(1), 8, 1024, time.Minute))
	holder := f.grant(f.say) // holds the program that the update retires
	f.update(withQueue(kernel.Options{Global: conc(1), Methods: map[string]kernel.Rule{mathAdd: conc(1)}}, 8, 1024, time.Minute))
	require.EqualValues(t, 2, f.k.Stats().LivePrograms, "current and retired")
	w1 := f.queue(context.Background(), kernel.Request{Method: f.say, Bytes: 10})
	w2 := f.queue(context.Background(), kernel.Request{Method: f.add, Bytes: 20})

	f.k.Seal()
	for _, w := range []*pending{w1, w2} {
		err := w.result(t)
		require.ErrorIs(t, err, kernel.ErrUnavailable)
		require.ErrorIs(t, err, kernel.ErrRejected)
		require.Equal(t, kernel.ReasonUnavailable, w.p.Reason())
	}
	require.Zero(t, f.k.Stats().QueuedCalls)
	require.Zero(t, f.k.Stats().QueuedBytes)

	// New requests are refused as unavailable, never bypassed.
	p, err := f.admit(f.say)
	require.NotNil(t, p)
	require.ErrorIs(t, err, kernel.ErrUnavailable)

	// The holder finishes normally; Drain waits for it.
	require.True(t, holder.Granted())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, f.k.Drain(ctx), context.DeadlineExceeded)
	select {
	case <-f.k.Drained():
		t.Fatal("drained while a permit is held")
	default:
	}

	var wg sync.WaitGroup
	for range 4 { // Drain may be awaited by many, it happens once
		wg.Go(func() { require.NoError(t, f.k.Drain(context.Background())) })
	}
	holder.Release()
	wg.Wait()
	<-f.k.Drained()
	st := f.k.Stats()
	require.Zero(t, st.LivePrograms)
	require.Zero(t, st.States, "every state reclaimed")
	require.Zero(t, st.DoubleReleases)
	require.True(t, st.Sealed)
}

func TestNothingIsPublishedAfterSeal(t *testing.T) {
	f := newFixture(t)
	g := f.enable(globalOnly(1))
	f.k.Seal()
	f.k.Seal() // idempotent
	_, err := f.k.Update(g, globalOnly(2))
	require.ErrorIs(t, err, kernel.ErrLifecycleClosed)
	_, err = f.k.Disable()
	require.ErrorIs(t, err, kernel.ErrLifecycleClosed)
	_, err = f.k.Enable(globalOnly(2))
	require.ErrorIs(t, err, kernel.ErrLifecycleClosed)
	require.Equal(t, g, f.k.Generation())
	require.NoError(t, f.k.Drain(context.Background()))
}

func TestSealWhileDisabledDrains(t *testing.T) {
	f := newFixture(t)
	f.k.Seal()
	require.NoError(t, f.k.Drain(context.Background()))
	p, err := f.admit(f.say)
	require.NotNil(t, p, "sealed admission refuses instead of bypassing")
	require.ErrorIs(t, err, kernel.ErrUnavailable)
}

func TestQueuedCancellationDuringUpdate(t *testing.T) {
	f := newFixture(t)
	f.enable(withQueue(globalOnly(1), 8, 1024, time.Minute))
	holder := f.grant(f.say)
	ctx, cancel := context.WithCancel(context.Background())
	w := f.queue(ctx, kernel.Request{Method: f.say, Bytes: 100})
	f.update(withQueue(globalOnly(2), 8, 1024, time.Minute)) // grows: w is granted
	require.NoError(t, w.result(t))
	w.p.Release()

	f.update(withQueue(globalOnly(1), 8, 1024, time.Minute))
	w2 := f.queue(ctx, kernel.Request{Method: f.say, Bytes: 100})
	f.update(withQueue(globalOnly(1), 4, 512, time.Minute))
	cancel()
	require.ErrorIs(t, w2.result(t), context.Canceled)
	require.False(t, w2.p.Granted())
	w2.p.Release() // silent: the refusal already returned everything
	holder.Release()
	f.requireIdle()
}

func TestQueuedDeadlineDuringUpdate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t)
		f.enable(withQueue(globalOnly(1), 8, 1024, time.Minute))
		holder := f.grant(f.say)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		w := f.queue(ctx, kernel.Request{Method: f.say})
		f.update(withQueue(globalOnly(1), 8, 1024, time.Hour))
		require.ErrorIs(t, w.result(t), context.DeadlineExceeded)
		holder.Release()
		f.requireIdle()
	})
}

// A waiter cancelled at the same moment as it is granted returns the
// units: nothing leaks whichever side wins.
func TestCancelRacingGrantLeaksNothing(t *testing.T) {
	f := newFixture(t)
	f.enable(withQueue(globalOnly(1), 8, 1024, time.Minute))
	for range 200 {
		holder := f.grant(f.say)
		ctx, cancel := context.WithCancel(context.Background())
		w := f.queue(ctx, kernel.Request{Method: f.say})
		go cancel()
		holder.Release()
		if err := w.result(t); err == nil {
			w.p.Release()
		} else {
			require.ErrorIs(t, err, context.Canceled)
		}
		f.requireIdle()
	}
}

func TestDisableRacingCancellation(t *testing.T) {
	f := newFixture(t)
	for range 100 {
		f.enable(withQueue(globalOnly(1), 8, 1024, time.Minute))
		holder := f.grant(f.say)
		ctx, cancel := context.WithCancel(context.Background())
		w := f.queue(ctx, kernel.Request{Method: f.say})
		var wg sync.WaitGroup
		wg.Go(cancel)
		wg.Go(func() { _, _ = f.k.Disable() })
		wg.Wait()
		require.ErrorIs(t, w.result(t), context.Canceled)
		holder.Release()
		f.requireIdle()
	}
	require.Zero(t, f.k.Stats().LivePrograms)
}

// Seal racing many writers: after Seal returns, the generation never moves.
func TestSealRacingWriters(t *testing.T) {
	f := newFixture(t)
	f.k.SetHooks(nil)
	f.enable(globalOnly(4))
	var wg sync.WaitGroup
	var attempts atomic.Int64
	stop := make(chan struct{})
	for i := range 4 {
		wg.Go(func() {
			for n := int64(1); ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				attempts.Add(1)
				switch i {
				case 0:
					_, _ = f.k.Disable()
				case 1:
					_, _ = f.k.Enable(globalOnly(n%5 + 1))
				default:
					_, _ = f.k.Update(f.k.Generation(), globalOnly(n%9+1))
				}
			}
		})
	}
	// Seal once the writers have published a good number of times, and
	// keep them writing for as many attempts again afterwards.
	for f.k.Generation() < 200 {
		runtime.Gosched()
	}
	f.k.Seal()
	sealedAt := f.k.Generation()
	after := attempts.Load()
	for attempts.Load() < after+200 {
		runtime.Gosched()
	}
	close(stop)
	wg.Wait()
	require.Equal(t, sealedAt, f.k.Generation())
	require.NoError(t, f.k.Drain(context.Background()))
}

// Double release is harmless and counted; counters never underflow.
func TestDoubleReleaseIsCountedAndHarmless(t *testing.T) {
	f := newFixture(t)
	f.enable(globalOnly(2))
	a := f.grant(f.say)
	b := f.grant(f.say)
	a.Release()
	a.Release()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(b.Release)
	}
	wg.Wait()
	st := f.k.Stats()
	require.EqualValues(t, 8, st.DoubleReleases)
	sc, _ := st.Scope("global/concurrency")
	require.Zero(t, sc.InUse)
	c, d := f.grant(f.say), f.grant(f.say)
	f.refused(f.say, kernel.ReasonConcurrency)
	c.Release()
	d.Release()
}

func TestPermitMisuse(t *testing.T) {
	f := newFixture(t)
	f.enable(globalOnly(2))
	a := f.grant(f.say)
	require.Panics(t, func() { f.k.Capture(a) }, "capturing into a held permit")
	require.Panics(t, func() { _ = a.Admit(context.Background(), kernel.Request{Method: f.say}) }, "admitting twice")
	a.Release()
	// A released permit is reusable.
	require.True(t, f.k.Capture(a))
	require.NoError(t, a.Admit(context.Background(), kernel.Request{Method: f.say}))
	a.Release()
	// An unknown method id is an error, and the permit holds nothing.
	p, err := f.admit(kernel.MethodID(99))
	require.ErrorIs(t, err, kernel.ErrUnknownMethod)
	p.Release()
	f.requireIdle()
	require.Zero(t, f.k.Stats().DoubleReleases)
}

// A permit captured but never admitted (the request failed before
// admission) must still be released to end its lease.
func TestCapturedNotAdmittedReleasesLease(t *testing.T) {
	f := newFixture(t)
	f.enable(globalOnly(1))
	var p kernel.Permit
	require.True(t, f.k.Capture(&p))
	_, err := f.k.Disable()
	require.NoError(t, err)
	require.EqualValues(t, 1, f.k.Stats().LivePrograms, "the captured program is retired, not drained")
	p.Release()
	require.Zero(t, f.k.Stats().LivePrograms)
}
