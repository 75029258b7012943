package flow

import "sync"

// RecvWindow is the receiver's view of one window: a stream's or the
// connection's, in one direction. It starts with the window given to
// [NewRecvWindow] (or [RecvWindow.Init]) and nothing outstanding.
//
// OnMessage is called by the connection's read loop for each message
// received on the window, before the message is queued for its consumer.
// Consume is called when the consumer takes a message (the handler's or the
// caller's Receive returns it), Drop when a message is discarded unread
// (its stream ended, was cancelled or refused), Grow when the receiver
// wants a larger window. All methods are safe for concurrent use and none
// blocks.
//
// Consume, Drop and Grow hand back the figures of a WindowUpdate to send
// for the window. The caller must send exactly that WindowUpdate, once:
// from the moment it is handed back, the window counts those bytes as
// returned (the sender may use them as soon as the frame arrives), and a
// frame not sent is credit lost for good.
//
// Every byte count must be the message's uncompressed length, the same
// figure the sender reserved, once per message: one OnMessage, then one
// Consume or one Drop.
type RecvWindow struct {
	mu          sync.Mutex
	window      uint64
	max         uint64
	outstanding uint64 // received and not announced as returned
	pending     uint64 // consumed or dropped, not yet announced; <= outstanding
}

// NewRecvWindow returns a window of initial bytes that [RecvWindow.Grow]
// may grow up to max (protocol.MaxWindow). It panics unless
// 0 < initial <= max.
func NewRecvWindow(initial, max uint32) *RecvWindow {
	w := new(RecvWindow)
	w.Init(initial, max)
	return w
}

// Init sets up a zero RecvWindow, for embedding it in another struct. It
// must be called once, before any other method.
func (w *RecvWindow) Init(initial, max uint32) {
	checkSizes(initial, max)
	w.window = uint64(initial)
	w.max = uint64(max)
}

// OnMessage records a message of n bytes received on the window. It
// returns a violation, and records nothing, if n > 0 and the credit (as the
// receiver sees it: window minus the bytes received and not yet announced
// as returned) was zero or negative before the message: the sender ignored
// the window, or sent a second message after one that borrowed; and if n
// exceeds protocol.MaxMessageCharge, whatever the credit. A message
// of 0 bytes is never a violation. It does not allocate unless it returns a
// violation.
func (w *RecvWindow) OnMessage(n uint64) error {
	if n == 0 {
		return nil
	}
	w.mu.Lock()
	window, outstanding := w.window, w.outstanding
	if outstanding < window && n <= maxCharge {
		w.outstanding += n
		w.mu.Unlock()
		return nil
	}
	w.mu.Unlock()
	if n > maxCharge {
		return violation("message charged %d bytes, above the largest charge a window can return (%d)", n, uint64(maxCharge))
	}
	return violation("message of %d bytes with no credit: window %d, %d bytes outstanding", n, window, outstanding)
}

// Consume records that the consumer took a message of n bytes. It reports
// send and the bytes to return in a WindowUpdate when the bytes to return
// reach a quarter of the window, or when the sender's credit is exhausted
// (zero or negative: the sender waits for this update). Otherwise the bytes
// wait for a later Consume, Drop or Grow. It panics if n exceeds the bytes
// received and neither consumed nor dropped (a bug in the caller). It does
// not allocate.
func (w *RecvWindow) Consume(n uint64) (returned uint64, send bool) {
	return w.give(n, false)
}

// Drop records that a message of n bytes was discarded unread, and
// returns its bytes at once, with any bytes Consume was keeping: send is
// false only when there is nothing to return (n == 0 and nothing pending).
// It panics like Consume.
func (w *RecvWindow) Drop(n uint64) (returned uint64, send bool) {
	return w.give(n, true)
}

func (w *RecvWindow) give(n uint64, now bool) (uint64, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if n > w.outstanding-w.pending {
		panic("sluice/flow: more bytes consumed or dropped than received")
	}
	w.pending += n
	if w.pending == 0 {
		return 0, false
	}
	if now || w.pending*4 >= w.window || w.outstanding >= w.window {
		return w.flushLocked(), true
	}
	return 0, false
}

func (w *RecvWindow) flushLocked() uint64 {
	r := w.pending
	w.outstanding -= r
	w.pending = 0
	return r
}

// Grow enlarges the window by n bytes and returns the WindowUpdate to send
// at once: the growth and any bytes Consume was keeping. The new window
// counts from now (the sender can only use it after the update arrives).
// It returns [ErrTooLarge], and changes nothing, if the window would exceed
// max; n == 0 changes nothing and returns zeros (nothing to send).
func (w *RecvWindow) Grow(n uint64) (returned, growth uint64, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if n > w.max-w.window {
		return 0, 0, ErrTooLarge
	}
	if n == 0 {
		return 0, 0, nil
	}
	w.window += n
	return w.flushLocked(), n, nil
}

// Window returns the window size, growth included.
func (w *RecvWindow) Window() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.window
}

// Outstanding returns the bytes received and not yet announced as
// returned (consumed, dropped or still queued).
func (w *RecvWindow) Outstanding() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.outstanding
}

// Pending returns the bytes consumed or dropped and not yet announced.
func (w *RecvWindow) Pending() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.pending
}
