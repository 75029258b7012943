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
	p     *Permit // its route is the one being acquired
	seq   uint64  // enqueue order, for FIFO across every state
	bytes int64
	// maxBytes is the MaxQueuedBytes of the program the request
	// captured: the bound ChargeQueued keeps.
	maxBytes int64
	ready    chan struct{} // closed once outcome is decided
	// horizon is the instant, on the kernel's clock, after which the
	// waiter will have given up (its captured MaxQueueDelay or its
	// context's deadline, whichever is first); zero when its route reads
	// no clock. A rate refusal whose retry time lies beyond it ends the
	// wait at once with reason rate.
	horizon time.Time

	outcome    waiterOutcome
	blockedOn  *state    // the list w was on when it finished
	retryAt    time.Time // outcomeRate: the rate limiter's retry time
	on         *state    // the state whose list holds w
	prev, next *waiter
	// all links every waiter of the kernel, whatever state it waits on,
	// so that Seal reaches each one.
	allPrev, allNext *waiter
}

type waiterOutcome uint8

const (
	outcomeWaiting waiterOutcome = iota
	outcomeGranted
	outcomeUnavailable
	outcomeCancelled
	outcomeTimedOut
	outcomeRate
)

// enqueue queues the request whose immediate attempt state st refused
// with d, if its program allows. It returns nil if the request was granted
// while enqueuing, ErrQueued if it waits (see Wait), or a refusal.
func (p *Permit) enqueue(ctx context.Context, prog *program, req Request, st *state, d spi.Decision, now time.Time) error {
	k := prog.k
	q := prog.queue
	if !q.Enabled() || (req.OneWay && !q.QueueOneWayCalls) || d.Hint == spi.HintNever {
		return p.refuse(reasonOf(st), st, d)
	}
	// How long this request could wait: the captured delay, or less if
	// its context ends first. A rate limiter that cannot grant within it
	// refuses now, with its hint, and the request takes no queue slot.
	patience := q.MaxQueueDelay
	if dl, ok := ctx.Deadline(); ok {
		patience = min(patience, time.Until(dl))
	}
	var horizon time.Time
	if !now.IsZero() {
		horizon = now.Add(patience)
		if beyond(d, horizon) {
			return p.refuse(ReasonRate, st, d)
		}
	}
	if req.Bytes > q.MaxQueuedBytes {
		return p.refuse(ReasonQueueFull, st, d)
	}
	if err := ctx.Err(); err != nil {
		p.end(ReasonNone)
		return err
	}

	p.status.Store(permitWaiting)
	w := &waiter{p: p, bytes: req.Bytes, maxBytes: q.MaxQueuedBytes, ready: make(chan struct{}), horizon: horizon}
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
	p.queued.Store(w)
	k.seq++
	w.seq = k.seq
	k.linkLocked(w)
	// Register first, then retry: a release that missed the registration
	// happened before the retry, which then sees its capacity.
	st.insert(w)
	k.settleLocked(w, now)
	k.unlockQ()
	if h := k.hooks; h != nil && h.afterEnqueue != nil {
		h.afterEnqueue(p)
	}
	p.w, p.deadline = w, time.Now().Add(q.MaxQueueDelay) // the delay is captured at enqueue
	return ErrQueued
}

// beyond reports whether a refusal's retry time lies after horizon.
func beyond(d spi.Decision, horizon time.Time) bool {
	return d.Hint == spi.HintAt && !horizon.IsZero() && d.RetryAt.After(horizon)
}

// Wait ends the wait of a request that Start queued: a grant (nil), a
// refusal (queue_timeout once the captured MaxQueueDelay has passed since
// the request queued, rate as soon as a rate limiter's retry time lies
// beyond what the request can wait, unavailable at Seal) or ctx's error.
// On any non-nil error the permit holds nothing. Wait must be called
// exactly once after Start returned ErrQueued, and only then.
func (p *Permit) Wait(ctx context.Context) error {
	w := p.w
	if w == nil || p.status.Load() != permitWaiting {
		panic("kernel: Wait without a queued Start")
	}
	p.w = nil
	defer p.queued.Store(nil)
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
			// Granted while the caller gave up: give everything back,
			// rate quota included (the request never ran).
			p.cancelRate()
			p.releaseUnits()
			p.end(ReasonNone)
			return err
		}
		p.status.Store(permitGranted)
		return nil
	case outcomeUnavailable:
		return p.refuse(ReasonUnavailable, nil, spi.Decision{})
	case outcomeTimedOut:
		return p.refuse(ReasonQueueTimeout, w.blockedOn, spi.Decision{})
	case outcomeRate:
		return p.refuse(ReasonRate, w.blockedOn, spi.RefuseUntil(w.retryAt))
	default:
		p.end(ReasonNone)
		return ctx.Err()
	}
}

// abandon ends w with outcome o unless a dispatcher decided it first.
func (k *Kernel) abandon(w *waiter, o waiterOutcome) {
	k.qmu.Lock()
	if w.outcome == outcomeWaiting {
		k.finishLocked(w, o)
	}
	k.qmu.Unlock()
}

// linkLocked adds w to the kernel's list of every waiter. k.qmu held.
func (k *Kernel) linkLocked(w *waiter) {
	w.allNext = k.allWaiters
	if k.allWaiters != nil {
		k.allWaiters.allPrev = w
	}
	k.allWaiters = w
}

// finishLocked takes w off its list, the kernel's list and the queue
// accounting, and publishes its outcome. For outcomeGranted the caller has
// already acquired w's route. k.qmu held.
func (k *Kernel) finishLocked(w *waiter, o waiterOutcome) {
	w.blockedOn = w.on
	w.on.remove(w)
	if w.allPrev == nil {
		k.allWaiters = w.allNext
	} else {
		w.allPrev.allNext = w.allNext
	}
	if w.allNext != nil {
		w.allNext.allPrev = w.allPrev
	}
	w.allPrev, w.allNext = nil, nil
	k.queuedCalls--
	k.queuedBytes -= w.bytes
	w.outcome = o
	close(w.ready)
}

// sealLocked ends every waiter with unavailable and stops every retry
// timer: after Seal nothing is granted. k.qmu held.
func (k *Kernel) sealLocked() {
	for k.allWaiters != nil {
		k.finishLocked(k.allWaiters, outcomeUnavailable)
	}
	for st := range k.armed {
		st.hintTimer.Stop()
		st.hintTimer, st.hintAt = nil, time.Time{}
	}
	clear(k.armed)
	k.wakeLater = k.wakeLater[:0]
}

// settleLocked retries w's route: it grants w, ends it (sealed, or a rate
// refusal beyond its horizon), or leaves it on the list of the state that
// now refuses it. k.qmu held.
func (k *Kernel) settleLocked(w *waiter, now time.Time) {
	if k.sealed.Load() {
		k.sealLocked()
		return
	}
	for {
		x, d, wake := w.p.tryAcquire(now, w)
		k.wakeLaterLocked(wake)
		if x == nil {
			k.finishLocked(w, outcomeGranted)
			return
		}
		if beyond(d, w.horizon) {
			w.retryAt = d.RetryAt
			k.finishLocked(w, outcomeRate)
			return
		}
		k.armHintLocked(x, d, now)
		if x == w.on {
			return
		}
		// Registered on another state now: retry once more, so that a
		// release there that missed the registration is not lost.
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
	k.unlockQ()
}

// dispatchChain dispatches st and every later state of its succession
// (capacity a returned unit freed along a concurrency kind replacement).
func (k *Kernel) dispatchChain(st *state) {
	k.qmu.Lock()
	k.wakeLaterLocked(st)
	k.unlockQ()
}

// wakeLaterLocked notes that st's chain may have capacity for its
// waiters; unlockQ dispatches it. k.qmu held.
func (k *Kernel) wakeLaterLocked(st *state) {
	if st != nil {
		k.wakeLater = append(k.wakeLater, st)
	}
}

// unlockQ dispatches the chains noted by wakeLaterLocked, then releases
// k.qmu. Dispatching a chain can note others; each pass runs to the end.
func (k *Kernel) unlockQ() {
	var now time.Time
	for len(k.wakeLater) > 0 {
		st := k.wakeLater[len(k.wakeLater)-1]
		k.wakeLater = k.wakeLater[:len(k.wakeLater)-1]
		for ; st != nil; st = st.succ.Load() {
			if st.head != nil {
				if now.IsZero() {
					now = k.clock.Now()
				}
				k.dispatchLocked(st, now)
			}
		}
	}
	k.qmu.Unlock()
}

// dispatchLocked grants st's waiters in FIFO order while their routes can be
// acquired. A waiter that another state refuses moves to that state's list
// (keeping its place by seq); the first waiter that st itself refuses ends
// the pass. k.qmu held.
func (k *Kernel) dispatchLocked(st *state, now time.Time) {
	if k.sealed.Load() {
		k.sealLocked()
		return
	}
	for w := st.head; w != nil; {
		next := w.next
		x, d, wake := w.p.tryAcquire(now, w)
		k.wakeLaterLocked(wake)
		if x == nil {
			k.finishLocked(w, outcomeGranted)
			w = next
			continue
		}
		if beyond(d, w.horizon) {
			// It cannot be granted before it gives up: end it now, with
			// the hint, and free its queue slot.
			w.retryAt = d.RetryAt
			k.finishLocked(w, outcomeRate)
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
	if k.armed == nil {
		k.armed = make(map[*state]struct{})
	}
	k.armed[st] = struct{}{}
	var t *time.Timer
	t = time.AfterFunc(d.RetryAt.Sub(now), func() {
		k.qmu.Lock()
		if st.hintTimer == t { // not replaced by an earlier hint meanwhile
			st.hintTimer, st.hintAt = nil, time.Time{}
			delete(k.armed, st)
		}
		if st.head != nil {
			k.dispatchLocked(st, k.clock.Now())
		}
		k.unlockQ()
	})
	st.hintTimer = t
}
