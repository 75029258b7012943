package kernel

import (
	"context"
	"time"

	"github.com/sluicerpc/sluice/spi"
)

// waiter is one queued request. It exists only while a request really
// waits; the immediate path never builds one. Fields other than ready are
// guarded by Kernel.qmu.
type waiter struct {
	route *route
	seq   uint64 // enqueue order, for FIFO across every state
	bytes int64
	ready chan struct{} // closed once outcome is decided

	outcome    waiterOutcome
	blockedOn  *state // the list w was on when it finished
	on         *state // the state whose list holds w
	prev, next *waiter
}

type waiterOutcome uint8

const (
	outcomeWaiting waiterOutcome = iota
	outcomeGranted
	outcomeUnavailable
	outcomeCancelled
	outcomeTimedOut
)

// enqueue queues the request whose immediate attempt state st refused
// with d, if its program allows. It returns nil if the request was granted
// while enqueuing, ErrQueued if it waits (see Wait), or a refusal.
func (p *Permit) enqueue(ctx context.Context, prog *program, req Request, st *state, d spi.Decision, now time.Time) error {
	k := prog.k
	r := p.route
	q := prog.queue
	if !q.Enabled() || (req.OneWay && !q.QueueOneWayCalls) || d.Hint == spi.HintNever {
		return p.refuse(reasonOf(st), st, d)
	}
	if req.Bytes > q.MaxQueuedBytes {
		return p.refuse(ReasonQueueFull, st, d)
	}
	if err := ctx.Err(); err != nil {
		p.end(ReasonNone)
		return err
	}

	p.status.Store(permitWaiting)
	w := &waiter{route: r, bytes: req.Bytes, ready: make(chan struct{})}
	k.qmu.Lock()
	if k.sealed.Load() {
		k.qmu.Unlock()
		return p.refuse(ReasonUnavailable, nil, spi.Decision{})
	}
	// One shared accounting for every program; the bounds are those of
	// the program this request captured.
	if k.queuedCalls >= q.MaxQueuedCalls || k.queuedBytes+req.Bytes > q.MaxQueuedBytes {
		k.qmu.Unlock()
		return p.refuse(ReasonQueueFull, st, d)
	}
	k.queuedCalls++
	k.queuedBytes += req.Bytes
	k.seq++
	w.seq = k.seq
	// Register first, then retry: a release that missed the registration
	// happened before the retry, which then sees its capacity.
	st.insert(w)
	k.settleLocked(w, now)
	k.qmu.Unlock()
	if h := k.hooks; h != nil && h.afterEnqueue != nil {
		h.afterEnqueue(p)
	}
	p.w, p.deadline = w, time.Now().Add(q.MaxQueueDelay) // the delay is captured at enqueue
	return ErrQueued
}

// Wait ends the wait of a request that Start queued: a grant (nil), a
// refusal (queue_timeout once the captured MaxQueueDelay has passed since
// the request queued, unavailable at Seal) or ctx's error. On any non-nil error the
// permit holds nothing. Wait must be called exactly once after Start
// returned ErrQueued, and only then.
func (p *Permit) Wait(ctx context.Context) error {
	w := p.w
	if w == nil || p.status.Load() != permitWaiting {
		panic("kernel: Wait without a queued Start")
	}
	p.w = nil
	k := p.lease.g.value.k
	select {
	case <-w.ready:
	default:
		timer := time.NewTimer(time.Until(p.deadline))
		select {
		case <-w.ready:
		case <-ctx.Done():
			k.abandon(w, outcomeCancelled)
		case <-timer.C:
			k.abandon(w, outcomeTimedOut)
		}
		timer.Stop()
	}

	switch w.outcome {
	case outcomeGranted:
		if err := ctx.Err(); err != nil {
			// Granted while the caller gave up: give the units back.
			p.releaseUnits()
			p.end(ReasonNone)
			return err
		}
		p.status.Store(permitGranted)
		return nil
	case outcomeUnavailable:
		return p.refuse(ReasonUnavailable, nil, spi.Decision{})
	case outcomeTimedOut:
		return p.refuse(ReasonQueueTimeout, w.lastBlocked(), spi.Decision{})
	default:
		p.end(ReasonNone)
		return ctx.Err()
	}
}

func (w *waiter) lastBlocked() *state { return w.blockedOn }

// abandon ends w with outcome o unless a dispatcher decided it first.
func (k *Kernel) abandon(w *waiter, o waiterOutcome) {
	k.qmu.Lock()
	if w.outcome == outcomeWaiting {
		k.finishLocked(w, o)
	}
	k.qmu.Unlock()
}

// finishLocked takes w off its list and out of the queue accounting, and
// publishes its outcome. For outcomeGranted the caller has already acquired
// w's route. k.qmu held.
func (k *Kernel) finishLocked(w *waiter, o waiterOutcome) {
	w.blockedOn = w.on
	w.on.remove(w)
	k.queuedCalls--
	k.queuedBytes -= w.bytes
	w.outcome = o
	close(w.ready)
}

// settleLocked retries w's route: it grants w, or leaves it on the list of
// the state that now refuses it. k.qmu held.
func (k *Kernel) settleLocked(w *waiter, now time.Time) {
	for {
		x, d := w.route.tryAcquire(now, w)
		if x == nil {
			k.finishLocked(w, outcomeGranted)
			return
		}
		k.armHintLocked(x, d, now)
		if x == w.on {
			return
		}
		w.on.remove(w)
		x.insert(w)
	}
}

// dispatchStates hands capacity of each state that has waiters to them.
func (k *Kernel) dispatchStates(states []*state) {
	contended := false
	for _, st := range states {
		if st.waiting.Load() > 0 {
			contended = true
			break
		}
	}
	if !contended {
		return
	}
	var now time.Time
	k.qmu.Lock()
	for _, st := range states {
		if st.head != nil {
			if now.IsZero() {
				now = k.clock.Now()
			}
			k.dispatchLocked(st, now)
		}
	}
	k.qmu.Unlock()
}

// dispatchLocked grants st's waiters in FIFO order while their routes can be
// acquired. A waiter that another state refuses moves to that state's list
// (keeping its place by seq); the first waiter that st itself refuses ends
// the pass. k.qmu held.
func (k *Kernel) dispatchLocked(st *state, now time.Time) {
	for w := st.head; w != nil; {
		next := w.next
		x, d := w.route.tryAcquire(now, w)
		if x == nil {
			k.finishLocked(w, outcomeGranted)
			w = next
			continue
		}
		k.armHintLocked(x, d, now)
		if x == st {
			return
		}
		st.remove(w)
		x.insert(w)
		w = next
	}
}

// armHintLocked schedules a dispatch of st at a rate limiter's retry time,
// keeping one timer per state at the earliest hint. k.qmu held.
func (k *Kernel) armHintLocked(st *state, d spi.Decision, now time.Time) {
	if d.Hint != spi.HintAt {
		return
	}
	if st.hintTimer != nil && !d.RetryAt.Before(st.hintAt) {
		return
	}
	if st.hintTimer != nil {
		st.hintTimer.Stop()
	}
	st.hintAt = d.RetryAt
	st.hintTimer = time.AfterFunc(d.RetryAt.Sub(now), func() {
		k.qmu.Lock()
		defer k.qmu.Unlock()
		st.hintTimer, st.hintAt = nil, time.Time{}
		if st.head != nil {
			k.dispatchLocked(st, k.clock.Now())
		}
	})
}
