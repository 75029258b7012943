package kernel_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/kernel"
)

// Interleavings forced at the kernel's hook points: capture, commit and
// release (enqueue is used by every queue test through the fixture).

// A publication between a request's capture and its admission does not
// change what the request uses (capture hook).
func TestPublicationBetweenCaptureAndAdmit(t *testing.T) {
	f := newFixture(t)
	f.enable(globalOnly(1))
	holder := f.grant(f.say)
	fired := false
	f.k.SetHooks(&kernel.Hooks{AfterCapture: func(*kernel.Permit) {
		if !fired {
			fired = true
			_, err := f.k.Disable() // lands after capture, before Admit
			require.NoError(t, err)
		}
	}})
	p, err := f.admit(f.say)
	require.True(t, fired)
	require.NotNil(t, p, "captured before Disable")
	requireReason(t, err, kernel.ReasonConcurrency) // the captured limit 1 applies
	p, err = f.admit(f.say)
	require.NoError(t, err)
	require.Nil(t, p, "after Disable: bypass")
	holder.Release()
	f.requireIdle()
}

// The request path never takes the control lock: a whole admission runs
// while a writer is inside the publication section, and sees the state as
// it was before the commit (commit hook).
func TestRequestsProceedDuringPublication(t *testing.T) {
	f := newFixture(t)
	g := f.enable(globalOnly(1))
	holder := f.grant(f.say)
	inside := false
	f.k.SetHooks(&kernel.Hooks{BeforeCommit: func() {
		inside = true
		p, err := f.admit(f.add) // the old program, the old limit
		requireReason(t, err, kernel.ReasonConcurrency)
		p.Release()
		holder.Release() // releases proceed too
		q := f.grant(f.add)
		q.Release()
	}})
	_, err := f.k.Update(g, globalOnly(2))
	require.NoError(t, err)
	require.True(t, inside)
	a, b := f.grant(f.say), f.grant(f.say)
	f.refused(f.say, kernel.ReasonConcurrency)
	a.Release()
	b.Release()
	f.requireIdle()
}

// A release hands the freed unit to the oldest waiter before Release
// returns (release hook).
func TestReleaseDispatchesBeforeReturning(t *testing.T) {
	f := newFixture(t)
	f.enable(withQueue(globalOnly(1), 4, 1024, time.Minute))
	holder := f.grant(f.say)
	w := f.queue(context.Background(), kernel.Request{Method: f.say, Bytes: 7})
	var seen kernel.Stats
	f.k.SetHooks(&kernel.Hooks{AfterRelease: func(p *kernel.Permit) {
		if p == holder {
			seen = f.k.Stats()
		}
	}})
	holder.Release()
	require.Zero(t, seen.QueuedCalls, "the waiter left the queue inside Release")
	require.Zero(t, seen.QueuedBytes)
	sc, _ := seen.Scope("global/concurrency")
	require.EqualValues(t, 1, sc.InUse, "and holds the unit")
	require.NoError(t, w.result(t))
	w.p.Release()
	f.requireIdle()
}
