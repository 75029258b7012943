package governor_test

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/kernel/governor"
)

func TestBudgetAcquireRelease(t *testing.T) {
	b := governor.NewBudget("decoded bytes", 100)
	assert.Equal(t, "decoded bytes", b.Name())
	require.True(t, b.TryAcquire(60))
	require.False(t, b.TryAcquire(41), "over the limit: nothing taken")
	assert.Equal(t, governor.BudgetSnapshot{Used: 60, Limit: 100}, b.Snapshot())
	require.True(t, b.TryAcquire(40))
	b.Release(100)
	assert.Zero(t, b.Snapshot().Used)
	assert.PanicsWithValue(t, "governor: decoded bytes: Release(1) with 0 held (released twice?)", func() { b.Release(1) })
	assert.Panics(t, func() { b.TryAcquire(0) })
	assert.Panics(t, func() { governor.NewBudget("x", 0) })
}

// Lowering the limit revokes nothing: what is held stays held, and new
// units are refused until the usage is under the new limit.
func TestBudgetLoweringRevokesNothing(t *testing.T) {
	b := governor.NewBudget("decodes", 4)
	for range 4 {
		require.True(t, b.TryAcquire(1))
	}
	b.SetLimit(2)
	assert.Equal(t, governor.BudgetSnapshot{Used: 4, Limit: 2}, b.Snapshot())
	assert.False(t, b.TryAcquire(1))
	b.Release(2)
	assert.False(t, b.TryAcquire(1), "at the new limit")
	b.Release(1)
	assert.True(t, b.TryAcquire(1))
	b.SetLimit(10)
	assert.True(t, b.TryAcquire(8))
}

// Concurrent takers: the usage never exceeds the limit, nothing is lost,
// and it ends at zero. With a fixed limit first (the exact invariant),
// then with a resizer (the usage stays within the largest limit set).
func TestBudgetStress(t *testing.T) {
	for _, resize := range []bool{false, true} {
		const limit = 100
		b := governor.NewBudget("retained compressed bytes", limit)
		var over atomic.Int64
		var wg sync.WaitGroup
		for w := range 8 {
			wg.Go(func() {
				for i := range 5000 {
					n := int64(1 + (w*7+i)%50)
					if b.TryAcquire(n) {
						if u := b.Snapshot().Used; u > limit {
							over.Store(u)
						}
						b.Release(n)
					}
				}
			})
		}
		// The takers run a fixed number of rounds, the resizer while they
		// run: counting the resizer's rounds instead (20,000 Goscheds
		// behind 8 spinning takers) took minutes under -race on 2 busy
		// cores.
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		for i := 0; ; i++ {
			select {
			case <-done:
			default:
				if resize {
					b.SetLimit(int64(1 + (i*37)%limit))
				} else {
					runtime.Gosched() // let the takers run
				}
				continue
			}
			break
		}
		assert.Zero(t, over.Load(), "usage above the limit (resize %v)", resize)
		assert.Zero(t, b.Snapshot().Used)
	}
}
