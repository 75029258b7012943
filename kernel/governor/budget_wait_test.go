package governor_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/kernel/governor"
)

func TestAcquireTakesAtOnceWhenUnitsAreFree(t *testing.T) {
	b := governor.NewBudget("decodes", 2)
	require.NoError(t, b.Acquire(context.Background(), 2))
	require.Equal(t, int64(2), b.Snapshot().Used)
	allocs := testing.AllocsPerRun(100, func() {
		b.Release(1)
		_ = b.Acquire(context.Background(), 1)
	})
	require.Zero(t, allocs, "the immediate path allocates nothing")
}

func TestAcquireWaitsInOrderAndNobodyBarges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := governor.NewBudget("decodes", 1)
		require.True(t, b.TryAcquire(1))
		var order []int
		var mu sync.Mutex
		var wg sync.WaitGroup
		for i := range 3 {
			wg.Go(func() {
				require.NoError(t, b.Acquire(context.Background(), 1))
				mu.Lock()
				order = append(order, i)
				mu.Unlock()
			})
			synctest.Wait() // i waits before i+1 arrives
		}
		require.Equal(t, 3, b.Waiters())
		require.Error(t, func() error {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return b.Acquire(ctx, 1)
		}(), "an ended context takes nothing")
		for range 3 {
			b.Release(1) // hands the unit to the oldest waiter
			synctest.Wait()
		}
		wg.Wait()
		require.Equal(t, []int{0, 1, 2}, order)
		require.Equal(t, governor.BudgetSnapshot{Used: 1, Limit: 1}, b.Snapshot())
		b.Release(1)
	})
}

func TestAcquireDoesNotLetASmallWaiterPassALargeOne(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := governor.NewBudget("decoded bytes", 10)
		require.True(t, b.TryAcquire(8))
		var big, small bool
		go func() { require.NoError(t, b.Acquire(context.Background(), 5)); big = true }()
		synctest.Wait()
		go func() { require.NoError(t, b.Acquire(context.Background(), 1)); small = true }()
		synctest.Wait()
		require.False(t, big)
		require.False(t, small, "2 units are free, but the waiter ahead needs 5")
		b.Release(4) // 4 used: 5 for the large one, then 1 for the small one
		synctest.Wait()
		require.True(t, big)
		require.True(t, small)
		require.Equal(t, int64(4+5+1), b.Snapshot().Used)
	})
}

func TestAcquireEndsWithItsContextHoldingNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := governor.NewBudget("decodes", 1)
		require.True(t, b.TryAcquire(1))
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() { errc <- b.Acquire(ctx, 1) }()
		synctest.Wait()
		cancel()
		require.ErrorIs(t, <-errc, context.Canceled)
		require.Zero(t, b.Waiters())
		b.Release(1)
		require.Equal(t, int64(0), b.Snapshot().Used, "the cancelled waiter took nothing")
	})
}

func TestRaisingTheLimitWakesWaiters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := governor.NewBudget("decodes", 1)
		require.True(t, b.TryAcquire(1))
		done := make(chan struct{})
		go func() { require.NoError(t, b.Acquire(context.Background(), 2)); close(done) }()
		synctest.Wait()
		b.SetLimit(3)
		<-done
		require.Equal(t, governor.BudgetSnapshot{Used: 3, Limit: 3}, b.Snapshot())
	})
}

// TestAcquireRacingCancelAndReleaseKeepsTheCount hammers the race of a
// grant with the waiter's context ending: whichever wins, the units are
// counted once, and the budget returns to zero.
func TestAcquireRacingCancelAndReleaseKeepsTheCount(t *testing.T) {
	b := governor.NewBudget("decodes", 2)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 2000 {
				ctx, cancel := context.WithCancel(context.Background())
				if (i+w)%3 == 0 {
					go cancel()
				}
				if b.Acquire(ctx, 1) == nil {
					if used := b.Snapshot().Used; used > 2 || used < 1 {
						t.Errorf("used %d with a unit held, limit 2", used)
					}
					b.Release(1)
				}
				cancel()
			}
		})
	}
	wg.Wait()
	require.Equal(t, governor.BudgetSnapshot{Used: 0, Limit: 2}, b.Snapshot())
	require.Zero(t, b.Waiters())
}
