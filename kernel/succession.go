package kernel

import (
	"sync"
	"time"

	"github.com/sluicerpc/sluice/spi"
)

// Succession: one budget per scope even when a configuration replaces the
// kind of a scope's concurrency limiter (the built-in limiter by an
// adaptive third-party kind, say).
//
// The old state keeps accounting for the units its holders took; the new
// state counts those units as occupied until they are released: at the
// handover the kernel acquires them on the new limiter (what does not fit
// is owed, and a state with owed units grants nothing), and every unit that
// comes back to the old state gives one back on the new one. Requests of
// older programs that still route to the old state are charged to the new
// one (state.current), so after the handover nothing new is admitted
// against the old limit.
//
// The count is exact without a lock on the request path:
//
//   - The successor is born owing everything (owesEverything) and admits
//     nothing until the handover has computed what it really carries. A
//     request of an older program granted on the old state after the link
//     bounces to the successor (below); there it is refused or queued by
//     the ordinary rules while the carry is unknown, never granted on room
//     that belongs to the old state's holders. (Before, the successor
//     started owing nothing: a bounced request was granted on it, and the
//     handover then found that room taken and owed it instead: each bounce
//     inside the handover was one holder over the limit.)
//   - The handover links old.succ, and only then reads the old state's
//     occupancy. A grant on the old state that the read missed happened
//     after the link, and its taker sees the link right after its grant
//     and gives the unit back (a bounce): no unit the read missed is ever
//     held.
//   - The read can include units that are about to bounce. The new state
//     therefore never raises what it carries after the handover, and
//     lowers it to the old state's occupancy on every return, which is
//     never below what the old state's holders really hold. A return
//     during the handover (a bounce) lowers "everything" to that
//     occupancy too, which is already exact: after the link the old
//     state's holders only leave.
//
// So what the new state carries is at every instant at least what the old
// state's holders hold (never too loose), and it falls to zero when they
// have all released (never permanently too strict). A successor grants
// only while it owes nothing, that is while every unit it carries is held
// on its own limiter, so its holders and its predecessor's together never
// exceed its limit.

// owesEverything is what a successor owes from its birth until its
// handover computed the carry: more than any limit, so it grants nothing,
// and far enough below the int64 edge that occupancy sums cannot
// overflow.
const owesEverything = 1 << 62

// testHookAfterLink, if set, runs inside a concurrency handover after the
// predecessor is linked and before its occupancy is read: the instant a
// bounced request meets the successor.
var testHookAfterLink func()

// carry is what a concurrency state owes its predecessor.
type carry struct {
	mu   sync.Mutex
	from *state
	// held is the units the kernel holds on the successor's limiter for
	// the predecessor's holders. Guarded by mu, as is the successor's
	// owed.
	held int64
}

// occupancy is the units st counts as held: its limiter's, plus those it
// owes its own predecessor.
func (st *state) occupancy() int64 {
	return st.lim.Snapshot(time.Time{}).InUse + st.owed.Load()
}

// carried reports whether st still counts units of a predecessor.
func (st *state) carried() bool {
	c := st.carry
	if c == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.held+st.owed.Load() > 0
}

// takeOver makes to, a new concurrency state, succeed from. It runs inside
// the publication section, before to is published; to.carry is set.
func takeOver(from, to *state) {
	to.owed.Store(owesEverything) // before any request can reach to
	from.succ.Store(to)           // then the link: see the type comment
	if testHookAfterLink != nil {
		testHookAfterLink()
	}
	c := to.carry
	c.mu.Lock()
	defer c.mu.Unlock()
	target := from.occupancy()
	if target > 0 && to.lim.TryAcquire(time.Time{}, target).Granted {
		c.held = target // all at once: the common case of a roomy new limit
	}
	for c.held < target && to.lim.TryAcquire(time.Time{}, 1).Granted {
		c.held++
	}
	to.owed.Store(target - c.held)
}

// reconcile lowers what st carries to its predecessor's occupancy. It
// returns whether that freed capacity on st (its waiters may be granted),
// after passing the change on to st's own successor, if any.
func (st *state) reconcile() bool {
	c := st.carry
	if c == nil {
		return false
	}
	c.mu.Lock()
	target := max(c.from.occupancy(), 0)
	owed := st.owed.Load()
	drop := c.held + owed - target
	if drop <= 0 {
		c.mu.Unlock()
		return false
	}
	fromOwed := min(drop, owed)
	st.owed.Store(owed - fromOwed)
	if rest := drop - fromOwed; rest > 0 {
		c.held -= rest
		st.lim.Release(time.Time{}, rest)
	}
	c.mu.Unlock()
	if next := st.succ.Load(); next != nil && next.class == spi.ClassConcurrency {
		next.reconcile()
	}
	return true
}

// returned is called after a unit came back to the concurrency state st
// (Release or Cancel): if st was replaced, its successor carries one unit
// fewer. It returns the successor when that freed capacity on it (and
// perhaps further down the chain), nil otherwise.
func (st *state) returned() *state {
	next := st.succ.Load()
	if next == nil || next.class != spi.ClassConcurrency || !next.reconcile() {
		return nil
	}
	return next
}
