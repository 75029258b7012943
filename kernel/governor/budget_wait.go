package governor

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
)

// Acquire takes n >= 1 units, waiting for them while the budget is short,
// until ctx ends; it returns nil with the units taken, or ctx's error with
// nothing taken. Waiters are served in arrival order and a new Acquire does
// not take units ahead of one that waits (no barging); TryAcquire, which
// never waits, may. A Release or a raised limit hands units to the oldest
// waiters that fit, so a waiter for more units than the limit waits until
// the limit is raised or ctx ends.
//
// The wait allocates one waiter; taking units at once allocates nothing.
// The number of waiters is bounded by the callers: the server's decode
// waiters each hold a call reservation, so at most the call capacity wait.
func (b *Budget) Acquire(ctx context.Context, n int64) error {
	if n < 1 {
		panic(fmt.Sprintf("governor: %s: Acquire(%d): n below 1", b.name, n))
	}
	if b.wait.n.Load() == 0 && b.TryAcquire(n) {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	w := &budgetWaiter{n: n, ready: make(chan struct{})}
	b.wait.push(w)
	b.wait.grant(b) // units freed before the push
	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
		if b.wait.remove(w) {
			return ctx.Err()
		}
		// Granted while ctx ended: give the units back (to the next
		// waiter) and report the end, as if ctx had won.
		<-w.ready
		b.Release(n)
		return ctx.Err()
	}
}

// Waiters is the number of Acquire calls waiting now.
func (b *Budget) Waiters() int { return int(b.wait.n.Load()) }

type budgetWaiter struct {
	n     int64
	ready chan struct{} // closed once the units are taken for the waiter
}

// budgetQueue is a Budget's FIFO of waiters. n mirrors len(q) for the
// lock-free "anyone waiting?" checks of Acquire and grant.
type budgetQueue struct {
	n  atomic.Int32
	mu sync.Mutex
	q  []*budgetWaiter
}

func (bq *budgetQueue) push(w *budgetWaiter) {
	bq.mu.Lock()
	bq.q = append(bq.q, w)
	bq.n.Store(int32(len(bq.q)))
	bq.mu.Unlock()
}

// remove takes w out of the queue and reports whether it was still there
// (not granted).
func (bq *budgetQueue) remove(w *budgetWaiter) bool {
	bq.mu.Lock()
	defer bq.mu.Unlock()
	for i, x := range bq.q {
		if x == w {
			bq.q = append(bq.q[:i], bq.q[i+1:]...)
			bq.n.Store(int32(len(bq.q)))
			return true
		}
	}
	return false
}

// grant takes units for the waiters at the head of the queue while they
// fit, in order. The head that does not fit stops the pass: later, smaller
// waiters do not pass it.
func (bq *budgetQueue) grant(b *Budget) {
	if bq.n.Load() == 0 {
		return
	}
	bq.mu.Lock()
	defer bq.mu.Unlock()
	for len(bq.q) > 0 {
		w := bq.q[0]
		if !b.TryAcquire(w.n) {
			break
		}
		bq.q[0] = nil
		bq.q = bq.q[1:]
		close(w.ready)
	}
	bq.n.Store(int32(len(bq.q)))
}
