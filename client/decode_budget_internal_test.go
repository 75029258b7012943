package client

import (
	"context"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The budget's own contract under a storm: holders never hold more than
// the size together, waiters whose contexts end leave nothing behind, and
// everything returns to zero.
func TestDecodeBudgetNeverExceedsItsSizeAndReturnsToZero(t *testing.T) {
	b := &decodeBudget{size: 100}
	var held, peak atomic.Int64
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 7))
			for range 2000 {
				n := 1 + r.Int64N(100)
				ctx, cancel := context.WithCancel(context.Background())
				if r.IntN(4) == 0 {
					go cancel() // races the wait
				}
				if err := b.acquire(ctx, n); err == nil {
					h := held.Add(n)
					for p := peak.Load(); h > p && !peak.CompareAndSwap(p, h); p = peak.Load() {
					}
					held.Add(-n)
					b.release(n)
				}
				cancel()
			}
		})
	}
	wg.Wait()
	require.LessOrEqual(t, peak.Load(), int64(100))
	require.Zero(t, b.used)
	require.Empty(t, b.waiters)
}

// Waiters are served in arrival order: a small one does not overtake a
// large one that waits before it, even when it would fit.
func TestDecodeBudgetServesWaitersInArrivalOrder(t *testing.T) {
	b := &decodeBudget{size: 100}
	require.NoError(t, b.acquire(context.Background(), 100))
	large, small := make(chan error, 1), make(chan error, 1)
	go func() { large <- b.acquire(context.Background(), 60) }()
	waitWaiters(t, b, 1)
	go func() { small <- b.acquire(context.Background(), 10) }()
	waitWaiters(t, b, 2)

	b.release(30) // 70 held: the small one would fit, the large one not
	require.Len(t, small, 0)
	require.Equal(t, 2, waiterCount(b))
	b.release(70)
	require.NoError(t, <-large)
	require.NoError(t, <-small)
	b.release(70)
	require.Zero(t, b.used)
}

func waiterCount(b *decodeBudget) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.waiters)
}

func waitWaiters(t *testing.T, b *decodeBudget, n int) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		if waiterCount(b) == n {
			return
		}
		runtime.Gosched()
	}
	t.Fatalf("never %d waiters", n)
}
