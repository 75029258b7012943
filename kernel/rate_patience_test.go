package kernel_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/kernel"
	"github.com/sluicerpc/sluice/limiters/tokenbucket"
	"github.com/sluicerpc/sluice/spi"
)

// A rate refusal that cannot be admitted in time is refused now: when the
// retry hint lies beyond what the request can wait (its captured
// MaxQueueDelay, or its context's deadline), it is refused at once with
// reason rate and the hint, and takes no queue slot.

// slowBucket is one token, refilled every 10 s.
var slowBucket = tokenbucket.Spec(1, 1, 10*time.Second)

func TestRateHintBeyondMaxQueueDelayIsRefusedNow(t *testing.T) {
	f := newClockedFixture(t)
	f.enable(withQueue(globalRate(slowBucket), 1, 1024, time.Second))
	f.grant(f.say).Release()
	start := f.clock.Now()
	p, err := f.admit(f.say)
	requireReason(t, err, kernel.ReasonRate)
	require.Equal(t, start.Add(10*time.Second), p.RetryAt(), "the hint is kept")
	require.Equal(t, "global/rate", p.Scope())
	st := f.k.Stats()
	require.Zero(t, st.QueuedCalls, "no queue slot taken")

	// It did not take the one queue slot: a waiter that can be served in
	// time still gets it.
	f.update(withQueue(globalRate(slowBucket), 1, 1024, time.Minute))
	ctx, cancel := context.WithCancel(context.Background())
	w := f.queue(ctx, kernel.Request{Method: f.say})
	require.Equal(t, 1, f.k.Stats().QueuedCalls)
	cancel()
	require.ErrorIs(t, w.result(t), context.Canceled)
	f.requireQueueEmpty()
}

func TestRateHintBeyondContextDeadlineIsRefusedNow(t *testing.T) {
	f := newClockedFixture(t)
	f.enable(withQueue(globalRate(slowBucket), 8, 1024, time.Minute))
	f.grant(f.say).Release()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	p, err := f.admitReq(ctx, kernel.Request{Method: f.say})
	requireReason(t, err, kernel.ReasonRate)
	require.False(t, p.RetryAt().IsZero())
	require.Zero(t, f.k.Stats().QueuedCalls)
}

// A waiter queued behind a concurrency limit that then meets a rate limit
// it cannot pass in time leaves the queue at once, with reason rate and
// the hint, instead of holding its slot until queue_timeout.
func TestWaiterMeetingARateHintBeyondItsDelayLeavesWithRate(t *testing.T) {
	f := newClockedFixture(t)
	f.enable(withQueue(kernel.Options{
		Global:  conc(1),
		Methods: map[string]kernel.Rule{echoSay: {Limits: []spi.Spec{slowBucket}}},
	}, 8, 1024, 5*time.Second))
	h := f.grant(f.say) // holds the global unit; took the one token
	w := f.queue(context.Background(), kernel.Request{Method: f.say})
	h.Release() // w gets the global unit, then the bucket refuses until +10 s
	err := w.result(t)
	requireReason(t, err, kernel.ReasonRate)
	require.Equal(t, f.clock.Now().Add(10*time.Second), w.p.RetryAt())
	f.requireQueueEmpty()
	require.Zero(t, f.scope("global/concurrency").InUse, "the global unit given back")
}
