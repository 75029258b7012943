package flow

import (
	"context"
	"sync"
)

// SendWindow is the sender's view of one window: a stream's or the
// connection's, in one direction. It starts with the window given to
// [NewSendWindow] (or [SendWindow.Init]) and nothing outstanding.
//
// Reserve, TryReserve and [ReservePair] are called by the goroutines that
// send messages on the window, before they write the message; Update is
// called by the connection's read loop for each WindowUpdate frame received
// for the window; Close by whoever ends the stream or the connection. All
// methods are safe for concurrent use. Only Reserve and ReservePair block,
// and never while holding the window's mutex.
//
// Waiters are served in arrival order and a newcomer never overtakes a
// waiter (no barging): when the credit turns positive, the window is handed
// to the oldest waiter first.
//
// A successful reservation is final: the caller must send the message (its
// bytes are outstanding until the peer returns them). A failed one leaves no
// trace. There is no way to give a successful reservation back, because the
// peer could otherwise return bytes that never reached it without being
// caught.
type SendWindow struct {
	mu          sync.Mutex
	window      uint64
	max         uint64
	outstanding uint64 // bytes reserved and not returned, including held
	held        uint64 // reserved by waiters that have not committed yet: not on the wire
	closed      bool
	done        chan struct{} // closed by Close
	head, tail  *waiter
	spare       *waiter // the next wait's (getWaiterLocked)
}

// waiter is one blocked reservation. Its fields are guarded by the
// window's mutex, except ready, which receives one token, under the
// mutex, when granted is set. A window keeps one spare waiter for its
// next wait (a stream whose sender outruns the window waits often, one
// wait at a time), so that waiting allocates nothing in steady state. It
// is the window's own, not shared through a pool: its channel must stay
// with the goroutines of the window's connection (a testing/synctest
// bubble forbids channels from outside it).
type waiter struct {
	n          uint64
	granted    bool
	ready      chan struct{} // capacity 1
	prev, next *waiter
}

// getWaiterLocked returns the spare waiter, or a new one, for n bytes.
func (w *SendWindow) getWaiterLocked(n uint64) *waiter {
	wt := w.spare
	if wt == nil {
		wt = &waiter{ready: make(chan struct{}, 1)}
	}
	w.spare = nil
	wt.n = n
	return wt
}

// putWaiterLocked keeps wt, out of the queue and its token taken if it
// had one, as the spare.
func (w *SendWindow) putWaiterLocked(wt *waiter) {
	*wt = waiter{ready: wt.ready}
	w.spare = wt
}

// NewSendWindow returns a window of initial bytes that updates may grow up
// to max (protocol.MaxWindow). It panics unless 0 < initial <= max < 2^32.
func NewSendWindow(initial, max uint32) *SendWindow {
	w := new(SendWindow)
	w.Init(initial, max)
	return w
}

// Init sets up a zero SendWindow, for embedding it in another struct; it
// is NewSendWindow without the allocation of the window itself. It must be
// called once, before any other method.
func (w *SendWindow) Init(initial, max uint32) {
	checkSizes(initial, max)
	w.window = uint64(initial)
	w.max = uint64(max)
	w.done = make(chan struct{})
}

func checkSizes(initial, max uint32) {
	if initial == 0 || initial > max {
		panic("sluice/flow: window sizes need 0 < initial <= max")
	}
}

// Reserve blocks until a message of n bytes may be sent on the window (its
// credit is positive; n == 0 never waits) and charges n to it, or until
// ctx is done or the window is closed. It returns nil when the reservation
// is made, ctx.Err() or [ErrClosed] when it is not (and then nothing is
// charged). Like x/sync/semaphore's Acquire, Reserve succeeds without
// looking at ctx when it need not wait.
func (w *SendWindow) Reserve(ctx context.Context, n uint64) error {
	return w.reserve(ctx, n, nil, false)
}

// TryReserve charges n to the window and reports true if a message of n
// bytes may be sent now, without waiting; otherwise (including when the
// window is closed or has waiters) it charges nothing and reports false.
func (w *SendWindow) TryReserve(n uint64) bool {
	if n > maxCharge {
		return false
	}
	w.mu.Lock()
	ok := w.canTakeLocked(n)
	if ok {
		w.outstanding += n
	}
	w.mu.Unlock()
	return ok
}

// canTakeLocked reports whether a newcomer may charge n now.
func (w *SendWindow) canTakeLocked(n uint64) bool {
	if w.closed {
		return false
	}
	return n == 0 || (w.head == nil && w.outstanding < w.window)
}

// reserve is Reserve with an optional second channel whose closing aborts
// the wait (the stream's, when w is the connection's window in a
// ReservePair), and hold: the reservation stays held (not committed) on
// success, for ReservePair to commit or undo.
func (w *SendWindow) reserve(ctx context.Context, n uint64, also <-chan struct{}, hold bool) error {
	if n > maxCharge {
		return ErrTooLarge
	}
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return ErrClosed
	}
	if w.canTakeLocked(n) {
		w.outstanding += n
		if hold {
			w.held += n
		}
		w.mu.Unlock()
		return nil
	}
	wt := w.getWaiterLocked(n)
	w.pushLocked(wt)
	w.mu.Unlock()

	var err error
	select {
	case <-wt.ready:
		w.mu.Lock()
		if !hold {
			w.held -= n // commit
		}
		w.putWaiterLocked(wt)
		w.mu.Unlock()
		return nil
	case <-ctx.Done():
		err = ctx.Err()
	case <-w.done:
		err = ErrClosed
	case <-also:
		err = ErrClosed
	}
	if testHookGivingUp != nil {
		testHookGivingUp()
	}
	w.mu.Lock()
	if wt.granted {
		// Granted while we were giving up: undo it, and hand the credit on.
		w.held -= n
		w.outstanding -= n
		<-wt.ready // sent with granted, under the mutex
	} else {
		w.removeLocked(wt)
	}
	w.putWaiterLocked(wt)
	w.grantLocked()
	w.mu.Unlock()
	return err
}

// testHookGivingUp, if set, runs when a waiter has decided to give up and
// before it takes the mutex again: the moment a grant can race with it.
var testHookGivingUp func()

// commit turns a held reservation into a final one.
func (w *SendWindow) commit(n uint64) {
	w.mu.Lock()
	w.held -= n
	w.mu.Unlock()
}

// undo withdraws a held reservation, which never reached the wire.
func (w *SendWindow) undo(n uint64) {
	w.mu.Lock()
	w.held -= n
	w.outstanding -= n
	w.grantLocked()
	w.mu.Unlock()
}

// Update applies a WindowUpdate received for the window: returned bytes
// and window growth. It returns a violation, and changes nothing, when both
// are zero, when returned exceeds the bytes outstanding (a double return),
// or when the window would exceed max. Otherwise it wakes the waiters the
// new credit lets through, oldest first. Update works on a closed window
// too (its figures stay exact) but wakes nobody.
func (w *SendWindow) Update(returned, growth uint64) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if returned == 0 && growth == 0 {
		return violation("window update with neither returned bytes nor growth")
	}
	if sent := w.outstanding - w.held; returned > sent {
		return violation("window update returns %d bytes, %d outstanding", returned, sent)
	}
	if growth > w.max-w.window {
		return violation("window update grows the window from %d by %d, above %d", w.window, growth, w.max)
	}
	w.outstanding -= returned
	w.window += growth
	w.grantLocked()
	return nil
}

// grantLocked hands the credit to waiters in arrival order while it is
// positive.
func (w *SendWindow) grantLocked() {
	for !w.closed && w.head != nil && w.outstanding < w.window {
		wt := w.head
		w.removeLocked(wt)
		w.outstanding += wt.n
		w.held += wt.n
		wt.granted = true
		wt.ready <- struct{}{}
	}
}

// Close closes the window: pending and later reservations fail with
// [ErrClosed]. It is idempotent.
func (w *SendWindow) Close() {
	w.mu.Lock()
	if !w.closed {
		w.closed = true
		close(w.done)
	}
	w.mu.Unlock()
}

// Window returns the current window size.
func (w *SendWindow) Window() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.window
}

// Outstanding returns the bytes reserved and not yet returned.
func (w *SendWindow) Outstanding() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.outstanding
}

// Credit returns window - outstanding; it is negative while a borrowing
// message's debt is outstanding.
func (w *SendWindow) Credit() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return int64(w.window) - int64(w.outstanding)
}

func (w *SendWindow) pushLocked(wt *waiter) {
	wt.prev = w.tail
	if w.tail != nil {
		w.tail.next = wt
	} else {
		w.head = wt
	}
	w.tail = wt
}

func (w *SendWindow) removeLocked(wt *waiter) {
	if wt.prev != nil {
		wt.prev.next = wt.next
	} else {
		w.head = wt.next
	}
	if wt.next != nil {
		wt.next.prev = wt.prev
	} else {
		w.tail = wt.prev
	}
	wt.prev, wt.next = nil, nil
}
