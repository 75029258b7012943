package plugin

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// callWatch bounds the calls to one plugin by the call timeout without a
// deadline per call. A deadline per call costs a timer on both sides and a
// grpc-timeout header: about a tenth of a local round trip
// (BenchmarkPluginBridge). Instead every call runs under a context shared by
// the calls of the current epoch and takes a slot stamped with the watch's
// coarse clock; a watchdog goroutine advances the clock four times per
// timeout, and when a slot is older than the timeout it takes the plugin as
// hung: it cancels the epoch's context, so that call and every other call
// in flight fail with errCallTimedOut, and starts a new epoch for later
// calls. A call fails between one and one and a quarter timeouts after it
// started. When every slot a call tries is taken (more than watchSlots
// calls in flight), the call gets a deadline of its own instead.
type callWatch struct {
	timeout time.Duration
	clock   atomic.Uint64 // watchdog ticks since start, from 1
	next    atomic.Uint64
	slots   [watchSlots]atomic.Uint64 // clock when a call took the slot; 0: free
	epoch   atomic.Pointer[watchEpoch]

	stopOnce sync.Once
	stop     chan struct{}
	done     chan struct{}
	onHang   func(calls int)
}

// watchSlots is how many calls the watch tracks at once; watchProbes how
// many slots a call tries.
const (
	watchSlots  = 256
	watchProbes = 4
	watchTicks  = 4 // clock ticks per timeout
)

// errCallTimedOut is the cause of a call's context when the watchdog ends
// it.
var errCallTimedOut = errors.New("the plugin did not answer within the call timeout")

type watchEpoch struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
}

func newEpoch() *watchEpoch {
	ctx, cancel := context.WithCancelCause(context.Background())
	return &watchEpoch{ctx: ctx, cancel: cancel}
}

// newCallWatch starts the watchdog; stopWatch ends it. onHang is told how
// many tracked calls were found overdue when an epoch is cancelled.
func newCallWatch(timeout time.Duration, onHang func(calls int)) *callWatch {
	w := newStoppedCallWatch(timeout, onHang)
	w.done = make(chan struct{})
	go w.run(max(timeout/watchTicks, time.Millisecond))
	return w
}

// newStoppedCallWatch is a callWatch without its watchdog goroutine: its
// clock advances only when tick is called (tests drive it so).
func newStoppedCallWatch(timeout time.Duration, onHang func(calls int)) *callWatch {
	w := &callWatch{timeout: timeout, stop: make(chan struct{}), done: make(chan struct{}), onHang: onHang}
	close(w.done) // no watchdog to wait for in stopWatch
	w.clock.Store(1)
	w.epoch.Store(newEpoch())
	return w
}

// call is one call in flight.
type call struct {
	ctx    context.Context
	slot   int                // -1 when the call has a deadline of its own
	cancel context.CancelFunc // only with a deadline of its own
	w      *callWatch
}

// begin starts a call. It never blocks and does not allocate unless every
// slot it tries is taken.
func (w *callWatch) begin() call {
	e := w.epoch.Load()
	stamp := w.clock.Load()
	n := w.next.Add(1)
	for i := range uint64(watchProbes) {
		s := int((n + i) % watchSlots)
		if w.slots[s].CompareAndSwap(0, stamp) {
			return call{ctx: e.ctx, slot: s, w: w}
		}
	}
	ctx, cancel := context.WithTimeoutCause(e.ctx, w.timeout, errCallTimedOut)
	return call{ctx: ctx, slot: -1, cancel: cancel, w: w}
}

// end ends the call; exactly once per begin.
func (c call) end() {
	if c.slot < 0 {
		c.cancel()
		return
	}
	c.w.slots[c.slot].Store(0)
}

// timedOut reports whether the call's context was ended by the watch.
func (c call) timedOut() bool { return errors.Is(context.Cause(c.ctx), errCallTimedOut) }

func (w *callWatch) run(interval time.Duration) {
	defer close(w.done)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
		}
		w.tick()
	}
}

// tick advances the watch's clock by one tick and fails the calls in
// flight if one is overdue; it returns how many were.
func (w *callWatch) tick() int {
	now := w.clock.Add(1)
	overdue := 0
	for s := range w.slots {
		// A slot stamped at tick k is overdue once the clock has
		// advanced watchTicks times past k: a full timeout. It is
		// stamped afresh, so that a call that ignores its cancellation
		// counts again only a timeout later.
		if k := w.slots[s].Load(); k != 0 && now-k > watchTicks && w.slots[s].CompareAndSwap(k, now) {
			overdue++
		}
	}
	if overdue > 0 {
		old := w.epoch.Swap(newEpoch())
		old.cancel(errCallTimedOut)
		if w.onHang != nil {
			w.onHang(overdue)
		}
	}
	return overdue
}

// stopWatch ends the watchdog and fails every call in flight with cause;
// later calls fail at once. It is idempotent.
func (w *callWatch) stopWatch(cause error) {
	w.stopOnce.Do(func() {
		close(w.stop)
		<-w.done
		closed, cancel := context.WithCancelCause(context.Background())
		cancel(cause)
		old := w.epoch.Swap(&watchEpoch{ctx: closed, cancel: cancel})
		old.cancel(cause)
	})
}
