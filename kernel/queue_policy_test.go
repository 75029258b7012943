package kernel_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/kernel"
)

// Seed 000 section D and seed 001's queue matrices.

func TestMaxQueuedCallsGrowAdmitsNewWaiters(t *testing.T) {
	f := newFixture(t)
	f.enable(withQueue(globalOnly(1), 2, 1<<20, time.Minute))
	h := f.grant(f.say)
	w1 := f.queue(context.Background(), kernel.Request{Method: f.say})
	w2 := f.queue(context.Background(), kernel.Request{Method: f.say})
	f.refused(f.say, kernel.ReasonQueueFull)
	f.update(withQueue(globalOnly(1), 4, 1<<20, time.Minute))
	w3 := f.queue(context.Background(), kernel.Request{Method: f.say})
	w4 := f.queue(context.Background(), kernel.Request{Method: f.say})
	f.refused(f.say, kernel.ReasonQueueFull)
	drainInOrder(t, h, w1, w2, w3, w4)
	f.requireIdle()
}

// drainInOrder releases h and then each waiter as it is granted, checking
// FIFO order.
func drainInOrder(t *testing.T, h *kernel.Permit, ws ...*pending) {
	t.Helper()
	h.Release()
	for i, w := range ws {
		require.NoError(t, w.result(t), "waiter %d", i)
		for _, later := range ws[i+1:] {
			later.stillWaiting(t)
		}
		w.p.Release()
	}
}

func TestMaxQueuedCallsShrinkEvictsNobody(t *testing.T) {
	f := newFixture(t)
	f.enable(withQueue(globalOnly(1), 4, 1<<20, time.Minute))
	h := f.grant(f.say)
	ws := []*pending{}
	for range 4 {
		ws = append(ws, f.queue(context.Background(), kernel.Request{Method: f.say}))
	}
	f.update(withQueue(globalOnly(1), 2, 1<<20, time.Minute))
	require.Equal(t, 4, f.k.Stats().QueuedCalls, "nobody is evicted")
	f.refused(f.say, kernel.ReasonQueueFull) // 4 >= 2
	// Two waiters leave: 2 >= 2, still full for new waiters.
	h.Release()
	require.NoError(t, ws[0].result(t))
	ws[0].p.Release()
	require.NoError(t, ws[1].result(t))
	require.Equal(t, 2, f.k.Stats().QueuedCalls)
	f.refused(f.say, kernel.ReasonQueueFull)
	ws[1].p.Release()
	require.NoError(t, ws[2].result(t))
	// 1 < 2: a new waiter is accepted again.
	w5 := f.queue(context.Background(), kernel.Request{Method: f.say})
	ws[2].p.Release()
	drainRest(t, ws[3], w5)
	f.requireIdle()
}

func drainRest(t *testing.T, ws ...*pending) {
	t.Helper()
	for _, w := range ws {
		require.NoError(t, w.result(t))
		w.p.Release()
	}
}

func TestMaxQueuedBytesOneSharedAccounting(t *testing.T) {
	f := newFixture(t)
	q := func(bytes int64) kernel.Options { return withQueue(globalOnly(1), 100, bytes, time.Minute) }
	f.enable(q(1000))
	h := f.grant(f.say)
	w1 := f.queue(context.Background(), kernel.Request{Method: f.say, Bytes: 600})
	// 600 + 500 > 1000
	_, err := f.admitReq(context.Background(), kernel.Request{Method: f.say, Bytes: 500})
	requireReason(t, err, kernel.ReasonQueueFull)
	// Grow: the new program's bound applies to the one counter.
	f.update(q(1200))
	w2 := f.queue(context.Background(), kernel.Request{Method: f.say, Bytes: 500})
	require.EqualValues(t, 1100, f.k.Stats().QueuedBytes)
	// Shrink below what is retained: nobody is evicted, new bytes refused.
	f.update(q(400))
	_, err = f.admitReq(context.Background(), kernel.Request{Method: f.say, Bytes: 1})
	requireReason(t, err, kernel.ReasonQueueFull)
	// A request larger than the bound itself can never wait.
	_, err = f.admitReq(context.Background(), kernel.Request{Method: f.say, Bytes: 401})
	requireReason(t, err, kernel.ReasonQueueFull)
	h.Release()
	require.NoError(t, w1.result(t))
	require.EqualValues(t, 500, f.k.Stats().QueuedBytes)
	w1.p.Release()
	require.NoError(t, w2.result(t))
	require.Zero(t, f.k.Stats().QueuedBytes)
	w2.p.Release()
	f.requireIdle()
}

func requireReason(t testing.TB, err error, want kernel.Reason) {
	t.Helper()
	got, ok := kernel.ReasonOf(err)
	require.True(t, ok, "not a refusal: %v", err)
	require.Equal(t, want, got)
}

// MaxQueueDelay is captured at enqueue: an update does not move an existing
// waiter's deadline.
func TestMaxQueueDelayCapturedAtEnqueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t)
		f.enable(withQueue(globalOnly(1), 8, 1024, 2*time.Second))
		h := f.grant(f.say)
		start := time.Now()
		a := f.queue(context.Background(), kernel.Request{Method: f.say})
		f.update(withQueue(globalOnly(1), 8, 1024, 500*time.Millisecond))
		b := f.queue(context.Background(), kernel.Request{Method: f.say})

		require.ErrorIs(t, b.result(t), kernel.ErrRejected)
		require.Equal(t, kernel.ReasonQueueTimeout, b.p.Reason())
		require.Equal(t, 500*time.Millisecond, time.Since(start))
		a.stillWaiting(t)

		require.ErrorIs(t, a.result(t), kernel.ErrRejected)
		require.Equal(t, kernel.ReasonQueueTimeout, a.p.Reason())
		require.Equal(t, 2*time.Second, time.Since(start))
		require.Equal(t, "global/concurrency", a.p.Scope())
		h.Release()
		f.requireIdle()
	})
}

func TestQueueOneWayCallsIsCapturedWithTheProgram(t *testing.T) {
	f := newFixture(t)
	opts := func(oneWay bool) kernel.Options {
		o := withQueue(globalOnly(1), 8, 1024, time.Minute)
		o.Queue.QueueOneWayCalls = oneWay
		return o
	}
	oneWay := kernel.Request{Method: f.say, OneWay: true}
	f.enable(opts(true))
	h := f.grant(f.say)
	queued := f.queue(context.Background(), oneWay)

	f.update(opts(false))
	// A new one-way request under the new program is dropped at once...
	_, err := f.admitReq(context.Background(), oneWay)
	requireReason(t, err, kernel.ReasonConcurrency)
	// ...while two-way requests still queue...
	twoWay := f.queue(context.Background(), kernel.Request{Method: f.say})
	// ...and the one-way request queued under the old program stays.
	queued.stillWaiting(t)

	f.update(opts(true))
	again := f.queue(context.Background(), oneWay)
	drainInOrder(t, h, queued, twoWay, again)
	f.requireIdle()
}

func TestNoQueueMeansImmediateRefusal(t *testing.T) {
	f := newFixture(t)
	f.enable(globalOnly(1))
	h := f.grant(f.say)
	f.refused(f.say, kernel.ReasonConcurrency)
	_, err := f.admitReq(context.Background(), kernel.Request{Method: f.say, OneWay: true})
	requireReason(t, err, kernel.ReasonConcurrency)
	h.Release()
	f.requireIdle()
}
