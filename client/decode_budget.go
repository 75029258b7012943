package client

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/protocol/status"
)

// DefaultMaxDecodedBytes is Options.MaxDecodedBytes' default: what all
// the client's decodes hold at once, twice codecs.DefaultMaxDecodedSize.
const DefaultMaxDecodedBytes = 128 << 20

// decodeBudget bounds the bytes the client's decodes hold together
// (Options.MaxDecodedBytes): a compressed response or stream message takes
// its declared length before its codec runs and gives it back when the
// decode returns, successful or not (the decoded body is then the
// caller's). Each decode holds at most its declared length of output (the
// codec's limit), so the decodes in progress hold at most the budget
// however many responses arrive at once: a server's bombs buy one
// budget's worth of memory, not one declared length per concurrent call.
//
// A decode that does not fit waits in arrival order (a large one is not
// overtaken by small ones forever) until the budget has room or its
// context ends. No declared length can exceed the budget: Dial refuses a
// budget below Options.Compression's MaxDecodedSize. A budget of zero
// bounds nothing. acquire does not allocate unless it waits.
type decodeBudget struct {
	size int64 // 0: no bound

	mu      sync.Mutex
	used    int64
	waiters []*decodeWaiter // FIFO
}

type decodeWaiter struct {
	n     int64
	ready chan struct{} // closed when the bytes are granted
}

// acquire takes n bytes, waiting for room in arrival order until ctx
// ends; then it returns an error saying so (status DeadlineExceeded or
// Canceled, errors.Is the context's error) with nothing taken.
func (b *decodeBudget) acquire(ctx context.Context, n int64) error {
	if b.size <= 0 || n <= 0 {
		return nil
	}
	b.mu.Lock()
	if len(b.waiters) == 0 && b.used+n <= b.size {
		b.used += n
		b.mu.Unlock()
		return nil
	}
	w := &decodeWaiter{n: n, ready: make(chan struct{})}
	b.waiters = append(b.waiters, w)
	b.mu.Unlock()
	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
	}
	b.mu.Lock()
	select {
	case <-w.ready: // granted meanwhile: give it back
		b.used -= n
	default:
		for i, x := range b.waiters {
			if x == w {
				b.waiters = append(b.waiters[:i], b.waiters[i+1:]...)
				break
			}
		}
	}
	b.grantLocked() // the head may have left
	b.mu.Unlock()
	return budgetWaitError(ctx, b.size, n)
}

// release gives back n bytes taken by acquire.
func (b *decodeBudget) release(n int64) {
	if b.size <= 0 || n <= 0 {
		return
	}
	b.mu.Lock()
	b.used -= n
	b.grantLocked()
	b.mu.Unlock()
}

// grantLocked wakes the waiters at the head that fit; b.mu held.
func (b *decodeBudget) grantLocked() {
	for len(b.waiters) > 0 && b.used+b.waiters[0].n <= b.size {
		w := b.waiters[0]
		b.waiters[0] = nil
		b.waiters = b.waiters[1:]
		b.used += w.n
		close(w.ready)
	}
	if len(b.waiters) == 0 {
		b.waiters = nil // let the backing array go
	}
}

// budgetWaitError is the error of a decode whose context ended while it
// waited for the budget: the context's code, a message naming the budget,
// and the context's error for errors.Is.
func budgetWaitError(ctx context.Context, size, n int64) error {
	err := ctx.Err()
	code := protocol.CodeCanceled
	if errors.Is(err, context.DeadlineExceeded) {
		code = protocol.CodeDeadlineExceeded
	}
	return &bodyError{
		st:    status.New(code, fmt.Sprintf("%v while the response (%d bytes declared) waited for the client's decoded-bytes budget (Options.MaxDecodedBytes, %d bytes, in use by other decodes)", err, n, size)),
		cause: err,
	}
}
