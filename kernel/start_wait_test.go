package kernel_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/kernel"
)

// capture captures a fresh permit, failing if admission is disabled.
func (f *fixture) capture() *kernel.Permit {
	f.t.Helper()
	p := new(kernel.Permit)
	require.True(f.t, f.k.Capture(p))
	return p
}

// TestStartGrantsOrRefusesWithoutBlocking: Start answers at once, as
// Admit's immediate path does.
func TestStartGrantsOrRefusesWithoutBlocking(t *testing.T) {
	f := newFixture(t)
	f.enable(globalOnly(1)) // no queue
	held := f.capture()
	require.NoError(t, held.Start(context.Background(), kernel.Request{Method: f.say}))
	assert.True(t, held.Granted())

	refused := f.capture()
	err := refused.Start(context.Background(), kernel.Request{Method: f.say})
	requireReason(t, err, kernel.ReasonConcurrency)
	assert.False(t, refused.Granted())
	held.Release()
	assert.Equal(t, uint64(0), f.k.Stats().DoubleReleases)
}

// TestStartQueuesAndWaitEndsIt: a request that must wait is queued by
// Start (holding its queue reservation) and granted through Wait on
// another goroutine when capacity frees.
func TestStartQueuesAndWaitEndsIt(t *testing.T) {
	f := newFixture(t)
	f.enable(withQueue(globalOnly(1), 4, 1000, time.Minute))
	held := f.capture()
	require.NoError(t, held.Start(context.Background(), kernel.Request{Method: f.say}))

	queued := f.capture()
	require.ErrorIs(t, queued.Start(context.Background(), kernel.Request{Method: f.say, Bytes: 100}), kernel.ErrQueued)
	<-f.enqueued
	st := f.k.Stats()
	assert.Equal(t, 1, st.QueuedCalls)
	assert.Equal(t, int64(100), st.QueuedBytes)

	done := make(chan error, 1)
	go func() { done <- queued.Wait(context.Background()) }()
	held.Release()
	require.NoError(t, <-done)
	assert.True(t, queued.Granted())
	assert.Zero(t, f.k.Stats().QueuedCalls)
	queued.Release()
}

// TestWaitHonoursItsContext: a queued request whose context ends leaves
// the queue with the context's error and holds nothing.
func TestWaitHonoursItsContext(t *testing.T) {
	f := newFixture(t)
	f.enable(withQueue(globalOnly(1), 4, 1000, time.Minute))
	held := f.capture()
	require.NoError(t, held.Start(context.Background(), kernel.Request{Method: f.say}))
	queued := f.capture()
	require.ErrorIs(t, queued.Start(context.Background(), kernel.Request{Method: f.say, Bytes: 10}), kernel.ErrQueued)
	<-f.enqueued
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.ErrorIs(t, queued.Wait(ctx), context.Canceled)
	assert.Zero(t, f.k.Stats().QueuedCalls)
	assert.Zero(t, f.k.Stats().QueuedBytes)
	held.Release()
	// The capacity went back to the limiter, not to the cancelled waiter.
	again := f.capture()
	require.NoError(t, again.Start(context.Background(), kernel.Request{Method: f.say}))
	again.Release()
}

// TestQueueDelayRunsFromEnqueue: the captured MaxQueueDelay counts from
// the moment Start queued the request, not from when Wait began.
func TestQueueDelayRunsFromEnqueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t)
		f.enable(withQueue(globalOnly(1), 4, 1000, 100*time.Millisecond))
		held := f.capture()
		require.NoError(t, held.Start(context.Background(), kernel.Request{Method: f.say}))
		queued := f.capture()
		require.ErrorIs(t, queued.Start(context.Background(), kernel.Request{Method: f.say}), kernel.ErrQueued)
		<-f.enqueued
		start := time.Now()
		time.Sleep(60 * time.Millisecond)
		requireReason(t, queued.Wait(context.Background()), kernel.ReasonQueueTimeout)
		assert.Equal(t, 100*time.Millisecond, time.Since(start))
		held.Release()
	})
}

func TestWaitWithoutQueuedStartPanics(t *testing.T) {
	f := newFixture(t)
	f.enable(globalOnly(1))
	p := f.capture()
	assert.PanicsWithValue(t, "kernel: Wait without a queued Start", func() { _ = p.Wait(context.Background()) })
	require.NoError(t, p.Start(context.Background(), kernel.Request{Method: f.say}))
	assert.PanicsWithValue(t, "kernel: Wait without a queued Start", func() { _ = p.Wait(context.Background()) })
	p.Release()
}
