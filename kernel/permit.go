package kernel

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/sluicerpc/sluice/spi"
)

// Permit is one request's admission: the program it captured, the units it
// holds, and its exactly-once release. It lives in storage the caller
// already has per call (for example the server's call state), so the
// immediate path allocates nothing. The zero Permit is idle and ready.
//
// Ownership: after a successful Kernel.Capture the permit owns a lease on
// the captured program until Release (or until Admit refuses). After a
// successful Admit it also holds one unit of every state on its route. The
// caller must call Release exactly once after a successful Capture, whatever
// ends the call; Release is safe to call more than once and from several
// goroutines (later calls do nothing but count a double release), and is a
// no-op on an idle permit. A released permit may be captured again.
type Permit struct {
	lease  Lease[*program]
	route  *route
	status atomic.Uint32

	// entry is the pinned partition entry (nil without a partition
	// layer), and own the route extended with the entry's states.
	entry *partEntry
	own   route

	// grantedAt is the instant the route was acquired (the now its rate
	// limiters were given; zero for a route without rate limits): a rate
	// Cancel of ReleaseUnused carries it, so that the limiter can tell
	// which window or period counted the units.
	grantedAt time.Time

	// Refusal details, set before Admit returns a refusal.
	reason  Reason
	scope   string
	retryAt time.Time

	// The waiter and the end of its queue delay (the program's
	// MaxQueueDelay from the moment it queued) between Start and Wait.
	w        *waiter
	deadline time.Time
	// queued is the waiter while the request is queued, for ChargeQueued
	// (which another goroutine than Wait's may call).
	queued atomic.Pointer[waiter]
}

const (
	permitIdle uint32 = iota
	permitCaptured
	permitWaiting
	permitGranted
	permitRefused
	permitReleased
)

func (p *Permit) capture(l Lease[*program]) {
	switch p.status.Load() {
	case permitIdle, permitRefused, permitReleased:
	default:
		l.Release()
		panic("kernel: Capture into a permit that is in use (Release it first)")
	}
	p.lease, p.route, p.entry, p.grantedAt = l, nil, nil, time.Time{}
	p.reason, p.scope, p.retryAt = ReasonNone, "", time.Time{}
	p.status.Store(permitCaptured)
}

// Generation returns the number of the program the permit captured (0 if
// none).
func (p *Permit) Generation() uint64 {
	if p.lease.g == nil {
		return 0
	}
	return p.lease.g.value.gen
}

// Granted reports whether Admit granted the permit and it is not yet
// released.
func (p *Permit) Granted() bool { return p.status.Load() == permitGranted }

// Reason returns why Admit refused (ReasonNone otherwise).
func (p *Permit) Reason() Reason { return p.reason }

// Scope names what refused, for example "method:echo/Say/concurrency" or
// "partition:tenant@v1" (empty for a queue or seal refusal).
func (p *Permit) Scope() string { return p.scope }

// RetryAt is the earliest time a retry could succeed, when a rate limiter
// refused and said so; zero otherwise.
func (p *Permit) RetryAt() time.Time { return p.retryAt }

// Admit runs admission for req under the captured program: an immediate
// grant, an immediate refusal, or a wait in the kernel's queue that ends in
// a grant, a refusal (queue_timeout after the program's MaxQueueDelay,
// rate as soon as a rate limiter's retry time lies beyond what the request
// can still wait, unavailable at Seal) or ctx's error. A rate refusal
// whose retry time lies beyond the captured MaxQueueDelay or ctx's
// deadline is immediate and takes no queue slot; RetryAt then says when to
// retry. Every scope of the route is acquired
// from the captured program, all or nothing. On any non-nil error the
// permit holds nothing: its lease is already returned.
//
// Admit must follow a successful Capture on this permit, once. Admit is
// Start followed, if the request queued, by Wait.
func (p *Permit) Admit(ctx context.Context, req Request) error {
	err := p.Start(ctx, req)
	if err == ErrQueued {
		return p.Wait(ctx)
	}
	return err
}

// ErrQueued is returned by Start when the request waits in the kernel's
// queue: exactly one call of Wait, on any goroutine, then ends the wait.
var ErrQueued = errors.New("kernel: request queued")

// Start is the non-blocking half of Admit, for a caller that must not
// block where it admits (a server's connection reader): it grants (nil),
// refuses (an error, as Admit's, and the permit holds nothing), or queues
// the request and returns ErrQueued, in which case the request holds its
// queue reservation (one call, req.Bytes) until Wait returns. ctx is
// checked before the request queues; Wait watches the context it is given.
//
// Start must follow a successful Capture on this permit, once.
func (p *Permit) Start(ctx context.Context, req Request) error {
	// The status stays "captured" on the immediate path (one atomic write
	// fewer); it becomes "waiting" only if the request queues.
	if p.status.Load() != permitCaptured {
		panic("kernel: Admit on a permit that is not freshly captured")
	}
	prog := p.lease.g.value
	k := prog.k
	// A request that captured a program before Seal but admits after it
	// is refused like a new one: nothing is granted after Seal.
	if prog.sealed || k.sealed.Load() {
		return p.refuse(ReasonUnavailable, nil, spi.Decision{})
	}
	if uint(req.Method) >= uint(len(prog.routes)) {
		p.end(ReasonNone)
		return ErrUnknownMethod
	}
	p.route = &prog.routes[req.Method]
	var now time.Time
	if p.route.needsClock {
		now = k.clock.Now()
	}
	if prog.part != nil {
		if !p.enterPartition(prog, req, now) {
			p.scope = prog.part.name
			prog.part.refusals[ReasonPartitionCapacity].Add(1)
			return p.refuse(ReasonPartitionCapacity, nil, spi.Decision{})
		}
	}
	st, d, wake := p.tryAcquire(now, nil)
	if wake != nil {
		k.dispatchChain(wake)
	}
	if st == nil {
		p.status.Store(permitGranted)
		return nil
	}
	return p.enqueue(ctx, prog, req, st, d, now)
}

// tryAcquire takes one unit of every state on the permit's route, in
// order, all or nothing. w is nil for a request that is not queued: any
// waiter on a state refuses it (no barging); a queued waiter is refused
// only by waiters older than it, and then k.qmu is held. A state that a
// later one replaced is resolved to the newest (state.current), so late
// requests of an old program are charged where new ones are; the states
// actually taken are recorded in the permit's own route, which Release and
// ReleaseUnused then return to. It returns nil on success, or the state that
// refused and its decision, after cancelling what earlier states granted.
// wake is a concurrency successor whose capacity a returned unit freed
// (rare: only around a concurrency kind replacement); the caller
// dispatches its chain.
func (p *Permit) tryAcquire(now time.Time, w *waiter) (refused *state, d spi.Decision, wake *state) {
	r := p.route
	var got [maxRouteStates]*state
	for i := 0; i < r.n; i++ {
		st := r.states[i]
		// The fast path: a state never replaced, without a carry, whose
		// grant or refusal needs nothing more (acquireOne otherwise).
		if st.succ.Load() == nil && st.carry == nil {
			if st.hasWaiterBefore(w) {
				d = spi.RefuseUntilRelease()
			} else {
				d = st.lim.TryAcquire(now, 1)
			}
			if st.succ.Load() != nil {
				// Replaced meanwhile: the slow path sorts it out from
				// the grant (or refusal) just made.
				st, d, wake = settleOne(st, now, w, d, wake)
			}
		} else {
			st, d, wake = acquireOne(st, now, w, wake)
		}
		if d.Granted {
			got[i] = st
			if st != r.states[i] {
				r = p.retarget(i, st)
			}
			continue
		}
		for j := i - 1; j >= 0; j-- {
			if x := got[j].giveBack(now); x != nil {
				wake = x
			}
		}
		return st, d, wake
	}
	p.grantedAt = now
	return nil, spi.Decision{}, wake
}

// acquireOne takes one unit of st's newest state, or says why not.
func acquireOne(st *state, now time.Time, w *waiter, wake *state) (*state, spi.Decision, *state) {
	st = st.current()
	if st.hasWaiterBefore(w) || (st.carry != nil && st.owed.Load() > 0) {
		return st, spi.RefuseUntilRelease(), wake
	}
	return settleOne(st, now, w, st.lim.TryAcquire(now, 1), wake)
}

// settleOne finishes acquireOne from decision d just made on st: a grant
// on a state replaced since is given back and taken on the successor, a
// refusal forever of a replaced rate lineage goes to the successor.
func settleOne(st *state, now time.Time, w *waiter, d spi.Decision, wake *state) (*state, spi.Decision, *state) {
	for {
		switch {
		case d.Granted && st.class == spi.ClassConcurrency && st.succ.Load() != nil:
			// Replaced between current() and the grant: give the unit
			// back and take it where the successor counts it.
			st.lim.Cancel(now, 1)
			if x := st.returned(); x != nil {
				wake = x
			}
			st = st.current()
		case !d.Granted && d.Hint == spi.HintNever && st.succ.Load() != nil:
			// A rate lineage sealed by a handover refuses forever: go
			// to its successor.
			st = st.current()
		default:
			return st, d, wake
		}
		if st.hasWaiterBefore(w) || (st.carry != nil && st.owed.Load() > 0) {
			return st, spi.RefuseUntilRelease(), wake
		}
		d = st.lim.TryAcquire(now, 1)
	}
}

// retarget records that the permit took slot i of its route on st (a
// successor of the route's state) and returns the permit's own route.
func (p *Permit) retarget(i int, st *state) *route {
	if p.route != &p.own {
		p.own = *p.route
		p.route = &p.own
	}
	p.own.states[i] = st
	return p.route
}

// giveBack cancels one unit granted by st at now. For a concurrency state
// it returns the successor whose capacity that freed, if any.
func (st *state) giveBack(now time.Time) *state {
	st.lim.Cancel(now, 1)
	if st.class == spi.ClassConcurrency {
		return st.returned()
	}
	return nil
}

// Release ends the permit exactly once: it returns one unit to every
// concurrency state the permit holds, hands freed capacity to the oldest
// eligible waiters, and ends the program lease. Rate quota taken by the
// permit stays taken: the request used it. See Permit for the rules on
// repeated calls.
func (p *Permit) Release() { p.release(false) }

// ReleaseUnused ends a permit whose request was granted but never used:
// refused by a later step of its server (call capacity, a draining
// connection, a context that ended before its handler ran). It is Release,
// and in addition gives back the rate quota the grant took, so that a
// refused request consumes no quota anywhere. The quota goes back as of
// the grant's instant (spi.Limiter.Cancel): a window that has ended since,
// or a bucket that has been full since, takes nothing back, so a late
// ReleaseUnused never adds quota to a later window. Quota that a rate algorithm
// replacement has handed over since the grant stays counted in the new
// algorithm (too strict for a moment, never too loose). On a permit that
// is not granted it is Release. Release and ReleaseUnused share one
// exactly-once end: whichever comes first decides, later calls of either
// count as double releases.
func (p *Permit) ReleaseUnused() { p.release(true) }

func (p *Permit) release(unused bool) {
	for {
		switch s := p.status.Load(); s {
		case permitIdle:
			return
		case permitGranted:
			if p.status.CompareAndSwap(s, permitReleased) {
				k := p.lease.g.value.k
				if unused {
					p.cancelRate()
				}
				p.releaseUnits()
				if e := p.entry; e != nil {
					e.unpin()
				}
				p.lease.Release()
				if h := k.hooks; h != nil && h.afterRelease != nil {
					h.afterRelease(p)
				}
				return
			}
		case permitCaptured:
			if p.status.CompareAndSwap(s, permitReleased) {
				p.lease.Release()
				return
			}
		case permitRefused:
			if p.status.CompareAndSwap(s, permitReleased) {
				return
			}
		case permitReleased:
			p.lease.g.value.k.doubleReleases.Add(1)
			return
		case permitWaiting:
			panic("kernel: Release while Admit is in progress; cancel Admit's context instead")
		}
	}
}

// cancelRate gives back the rate quota of a granted permit, at the
// instant of its grant (spi.Limiter.Cancel): a limiter whose counting
// window has passed since, or that has been full since, gives nothing
// back, so that a late Cancel never lends the quota to a later window.
func (p *Permit) cancelRate() {
	r := p.route
	for i := r.n - 1; i >= 0; i-- {
		if st := r.states[i]; st.class == spi.ClassRate {
			st.lim.Cancel(p.grantedAt, 1)
		}
	}
}

// releaseUnits returns the route's concurrency units and dispatches
// waiters of states that have any. It reads no clock: a concurrency
// limiter does not depend on time, and taken rate quota stays taken.
func (p *Permit) releaseUnits() {
	r := p.route
	contended := false
	var wake *state
	for i := r.n - 1; i >= 0; i-- {
		st := r.states[i]
		if st.class != spi.ClassConcurrency {
			continue
		}
		st.lim.Release(time.Time{}, 1)
		if st.waiting.Load() > 0 {
			contended = true
		}
		if st.succ.Load() != nil {
			if x := st.returned(); x != nil {
				wake = x
			}
		}
	}
	if contended {
		p.lease.g.value.k.dispatchStates(r.states[:r.n])
	}
	if wake != nil {
		p.lease.g.value.k.dispatchChain(wake)
	}
}

// enterPartition pins the request's partition entry and extends its route
// with the entry's states. It returns false at partition capacity.
func (p *Permit) enterPartition(prog *program, req Request, now time.Time) bool {
	cat := prog.k.cat
	key, ok := prog.selector(Facts{
		Service:  cat.ServiceName(cat.ServiceOf(req.Method)),
		Method:   cat.FullName(req.Method),
		MethodID: req.Method,
		OneWay:   req.OneWay,
		Conn:     req.Conn,
		Identity: req.Identity,
		Metadata: req.Metadata,
	})
	e := prog.part.pin(key, !ok, now)
	if e == nil {
		return false
	}
	p.entry = e
	p.own = *p.route
	for _, st := range e.states.Load().s {
		if st != nil {
			p.own.states[p.own.n] = st
			p.own.n++
		}
	}
	p.route = &p.own
	return true
}

func (p *Permit) refuse(reason Reason, st *state, d spi.Decision) error {
	if st != nil {
		p.scope = st.name
		if st.ns != nil {
			st.ns.refusals[reason].Add(1)
		} else {
			st.refusals[reason].Add(1)
		}
	}
	if d.Hint == spi.HintAt {
		p.retryAt = d.RetryAt
	}
	p.end(reason)
	return reason.err()
}

// end finishes a permit that holds no units: it unpins its partition entry
// and returns its lease.
func (p *Permit) end(reason Reason) {
	p.reason = reason
	if e := p.entry; e != nil {
		p.entry = nil
		e.unpin()
	}
	p.status.Store(permitRefused)
	p.lease.Release()
}

func reasonOf(st *state) Reason {
	if st.class == spi.ClassRate {
		return ReasonRate
	}
	return ReasonConcurrency
}
