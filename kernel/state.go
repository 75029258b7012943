package kernel

import (
	"sync/atomic"
	"time"

	"github.com/sluicerpc/sluice/spi"
)

// state is one stable unit of admission state: a limiter bound to a scope.
// Programs hold pointers to states; states outlive programs and are reused
// by every later program that binds the same key.
type state struct {
	key  stateKey
	name string // "global/concurrency", "method:echo/Say/rate", ...
	// ns is the namespace of a partition entry's state (nil for the
	// global, service and method states): its refusals are counted
	// there, so that their count does not depend on the entries' lives.
	ns *namespace
	// refusals counts the requests this state refused, by reason
	// (ScopeStats.Refusals). Not for partition entries' states.
	refusals [reasonCount]atomic.Uint64
	kind     spi.LimiterKind
	class    spi.Class
	lim      spi.Limiter

	// params are the committed parameters. Guarded by Kernel.mu.
	params spi.Params

	// succ is set when a later state replaced this one at its scope (a
	// rate algorithm or a concurrency kind replaced): requests that still
	// route here, because they captured an older program, are charged to
	// the newest state instead.
	succ atomic.Pointer[state]

	// carry is set (before publication, immutable after) on a
	// concurrency state that replaced another's kind: the units its
	// predecessor's holders still occupy, counted here until they
	// release. owed is the part of them that did not fit in the
	// limiter; while it is positive the state grants nothing.
	carry *carry
	owed  atomic.Int64

	// refs counts unreclaimed programs that bind this state. Incremented
	// under Kernel.mu at publication, decremented (lock-free) when a
	// program drains. A state with refs == 0 has no holders and no
	// waiters: both keep their program's lease.
	refs atomic.Int64

	// waiting counts waiters blocked on this state. Read without a lock
	// on the immediate path so that a new request never takes capacity
	// ahead of a waiter (no barging); changed under Kernel.qmu.
	waiting atomic.Int32

	// The FIFO of waiters blocked on this state, oldest first, and the
	// pending retry-hint timer. Guarded by Kernel.qmu.
	head, tail *waiter
	hintTimer  *time.Timer
	hintAt     time.Time
}

// current follows succ to the newest lineage (s itself for almost every
// state: one atomic load).
func (s *state) current() *state {
	for {
		n := s.succ.Load()
		if n == nil {
			return s
		}
		s = n
	}
}

// hasWaiterBefore reports whether a waiter ahead of w is blocked on s. For
// w == nil (a request that is not queued) any waiter counts, read without a
// lock; otherwise k.qmu is held.
func (s *state) hasWaiterBefore(w *waiter) bool {
	if w == nil {
		return s.waiting.Load() > 0
	}
	h := s.head
	return h != nil && h.seq < w.seq
}

// insert links w into the list in seq order (oldest first). Guarded by qmu.
func (s *state) insert(w *waiter) {
	w.on = s
	s.waiting.Add(1)
	at := s.tail
	for at != nil && at.seq > w.seq {
		at = at.prev
	}
	w.prev = at
	if at == nil {
		w.next = s.head
		s.head = w
	} else {
		w.next = at.next
		at.next = w
	}
	if w.next == nil {
		s.tail = w
	} else {
		w.next.prev = w
	}
}

// remove unlinks w. Guarded by qmu.
func (s *state) remove(w *waiter) {
	if w.prev == nil {
		s.head = w.next
	} else {
		w.prev.next = w.next
	}
	if w.next == nil {
		s.tail = w.prev
	} else {
		w.next.prev = w.prev
	}
	w.prev, w.next, w.on = nil, nil, nil
	s.waiting.Add(-1)
}
