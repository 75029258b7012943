package kernel_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/kernel"
)

// TestChargeQueuedAddsStreamBytesWithinTheBound: stream data that arrives
// for a queued request joins its queued bytes within the captured
// MaxQueuedBytes; past it nothing is charged and false says to refuse;
// every byte leaves the accounting with the waiter, whatever its outcome.
func TestChargeQueuedAddsStreamBytesWithinTheBound(t *testing.T) {
	for _, end := range []string{"grant", "cancel"} {
		t.Run(end, func(t *testing.T) {
			f := newFixture(t)
			f.enable(withQueue(globalOnly(1), 4, 1000, time.Minute))
			held := f.capture()
			require.NoError(t, held.Start(context.Background(), kernel.Request{Method: f.say}))

			queued := f.capture()
			require.True(t, queued.ChargeQueued(50), "not queued yet: nothing to charge, nothing refused")
			assert.Zero(t, f.k.Stats().QueuedBytes)
			require.ErrorIs(t, queued.Start(context.Background(), kernel.Request{Method: f.say, Bytes: 100}), kernel.ErrQueued)
			<-f.enqueued
			require.True(t, queued.ChargeQueued(400))
			require.True(t, queued.ChargeQueued(0))
			assert.Equal(t, int64(500), f.k.Stats().QueuedBytes)
			require.False(t, queued.ChargeQueued(501), "past MaxQueuedBytes (1000): refused")
			assert.Equal(t, int64(500), f.k.Stats().QueuedBytes, "a refusal charges nothing")
			require.True(t, queued.ChargeQueued(500), "up to the bound exactly")

			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- queued.Wait(ctx) }()
			if end == "grant" {
				held.Release()
				require.NoError(t, <-done)
				assert.True(t, queued.Granted())
				require.True(t, queued.ChargeQueued(10_000), "granted: its bytes are no longer the queue's")
				queued.Release()
			} else {
				cancel()
				require.ErrorIs(t, <-done, context.Canceled)
				held.Release()
			}
			cancel()
			st := f.k.Stats()
			assert.Zero(t, st.QueuedCalls)
			assert.Zero(t, st.QueuedBytes, "every charged byte left with the waiter")
		})
	}
}

// TestChargeQueuedSharesTheKernelsTotal: two queued requests share one
// accounting: what one charged leaves less for the other.
func TestChargeQueuedSharesTheKernelsTotal(t *testing.T) {
	f := newFixture(t)
	f.enable(withQueue(globalOnly(1), 4, 1000, time.Minute))
	held := f.capture()
	require.NoError(t, held.Start(context.Background(), kernel.Request{Method: f.say}))
	a, b := f.capture(), f.capture()
	require.ErrorIs(t, a.Start(context.Background(), kernel.Request{Method: f.say, Bytes: 100}), kernel.ErrQueued)
	<-f.enqueued
	require.ErrorIs(t, b.Start(context.Background(), kernel.Request{Method: f.say, Bytes: 100}), kernel.ErrQueued)
	<-f.enqueued
	require.True(t, a.ChargeQueued(700))
	require.False(t, b.ChargeQueued(101), "900 queued: 101 more would pass 1000")
	require.True(t, b.ChargeQueued(100))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, a.Wait(ctx), context.Canceled)
	require.ErrorIs(t, b.Wait(ctx), context.Canceled)
	assert.Zero(t, f.k.Stats().QueuedBytes)
	held.Release()
}

// TestChargeQueuedRacesTheGrant: charges from another goroutine racing
// the grant never leave bytes behind.
func TestChargeQueuedRacesTheGrant(t *testing.T) {
	f := newFixture(t)
	f.enable(withQueue(globalOnly(1), 64, 1<<40, time.Minute))
	for range 200 {
		held := f.capture()
		require.NoError(t, held.Start(context.Background(), kernel.Request{Method: f.say}))
		q := f.capture()
		require.ErrorIs(t, q.Start(context.Background(), kernel.Request{Method: f.say, Bytes: 1}), kernel.ErrQueued)
		<-f.enqueued
		var wg sync.WaitGroup
		wg.Go(func() {
			for range 50 {
				q.ChargeQueued(3)
			}
		})
		done := make(chan error, 1)
		go func() { done <- q.Wait(context.Background()) }()
		held.Release()
		require.NoError(t, <-done)
		wg.Wait()
		q.Release()
		require.Zero(t, f.k.Stats().QueuedBytes)
	}
}
