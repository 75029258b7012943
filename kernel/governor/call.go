package governor

import (
	"fmt"
	"sync/atomic"
)

// CallCapacityReason is the reason a server reports with ResourceExhausted
// when [Call.Reserve] refuses a call; the refusing [CapacityLevel] says
// which bound was full.
const CallCapacityReason = "call_capacity"

// CapacityLevel names the level whose [CallCapacity] refused a reservation.
type CapacityLevel uint8

const (
	// LevelNone: nothing refused (the reservation was granted).
	LevelNone CapacityLevel = iota
	// LevelConnection: the connection's capacity was full.
	LevelConnection
	// LevelServer: the server's capacity was full.
	LevelServer
	// LevelShare: the server was nearly full and the connection held its
	// fair share of it ([ConnCapacities.OverShare]).
	LevelShare
)

// String returns "none", "connection", "server" or "connection's fair share".
func (l CapacityLevel) String() string {
	switch l {
	case LevelNone:
		return "none"
	case LevelConnection:
		return "connection"
	case LevelServer:
		return "server"
	case LevelShare:
		return "connection's fair share"
	}
	return fmt.Sprintf("CapacityLevel(%d)", uint8(l))
}

// Call states. activating and releasePending exist so that a Release racing
// an Activate in progress never sees counters half moved: the Release wins
// the release (returns true) and the Activate completes it.
const (
	callNone           uint32 = iota // never reserved, or Reset
	callReserved                     // holds a reservation on each level
	callActivating                   // Activate is moving the counters
	callActive                       // holds an active slot on each level
	callReleasePending               // Release won during activating; Activate releases
	callReleasing                    // the winning Release is returning the counters
	callReleased                     // counters returned; terminal until Reset
)

var callStateNames = [...]string{"none", "reserved", "activating", "active", "release-pending", "releasing", "released"}

func callStateName(s uint32) string {
	if int(s) < len(callStateNames) {
		return callStateNames[s]
	}
	return fmt.Sprintf("state(%d)", s)
}

// Call is the call-capacity state of one call, to embed in the caller's own
// per-call storage (it allocates nothing). It holds a reservation, then an
// active slot, on a connection's and a server's [CallCapacity], and returns
// them exactly once:
//
//	none -> reserved -> active -> released
//	        reserved ----------> released
//
// Ownership: the goroutine that owns the call runs Reserve, Activate and
// Reset. Release may be called by any goroutine, concurrently with other
// Release calls and with Activate (a cancellation racing the handler's
// start); exactly one Release returns true. Nothing blocks.
//
// The zero value is a fresh Call. A Call must not be copied after Reserve.
type Call struct {
	state  atomic.Uint32
	conn   *CallCapacity
	server *CallCapacity
}

// Reserve takes a reservation on conn, then on server, all or nothing: if
// server refuses, the connection reservation is undone before Reserve
// returns (a concurrent reservation on conn may see that slot taken in the
// meantime and be refused). A nil capacity is an unbounded level. On success
// it returns (true, LevelNone) and the Call is reserved; on refusal it
// returns false and the refusing level, and the Call stays fresh.
//
// It panics if the Call is not fresh (reserved, active, or released and not
// Reset).
func (c *Call) Reserve(conn, server *CallCapacity) (ok bool, refused CapacityLevel) {
	if s := c.state.Load(); s != callNone {
		panic("governor: Call.Reserve on a Call in state " + callStateName(s) + " (Reset a released Call before reuse)")
	}
	if conn != nil && !conn.TryReserve() {
		return false, LevelConnection
	}
	if server != nil && !server.TryReserve() {
		if conn != nil {
			conn.ReleaseReserved()
		}
		return false, LevelServer
	}
	c.conn, c.server = conn, server
	c.state.Store(callReserved)
	return true, LevelNone
}

// Activate turns the Call's reservations into active slots on both levels,
// when the handler starts, and returns true. If a concurrent Release already
// won, nothing is activated, Activate returns false and the handler must not
// run (if that Release raced this Activate, Activate returns the capacity
// itself before returning).
//
// It panics with "governor: Activate without a reservation" if the Call was
// never reserved, and panics if it is already active or activating.
func (c *Call) Activate() bool {
	for {
		switch s := c.state.Load(); s {
		case callReserved:
			if !c.state.CompareAndSwap(callReserved, callActivating) {
				continue // a Release won; re-read
			}
			if c.conn != nil {
				c.conn.Activate()
			}
			if c.server != nil {
				c.server.Activate()
			}
			return c.finishActivate()
		case callReleasePending, callReleasing, callReleased:
			return false
		case callNone:
			panic("governor: Activate without a reservation")
		default:
			panic("governor: Call.Activate on a Call in state " + callStateName(s) + " (Activate called twice)")
		}
	}
}

// Release returns whatever the Call holds (a reservation or an active slot,
// on both levels) and reports whether this call released it. Exactly one
// Release of a reserved or active Call returns true; every later or losing
// call, and a Release of a never-reserved Call, returns false and does
// nothing, so callers can count double releases. When the winner returns,
// the capacity is back on both levels, except while an Activate is in
// progress, which then returns it before it returns.
func (c *Call) Release() bool {
	for {
		switch c.state.Load() {
		case callReserved:
			if c.state.CompareAndSwap(callReserved, callReleasing) {
				if c.conn != nil {
					c.conn.ReleaseReserved()
				}
				if c.server != nil {
					c.server.ReleaseReserved()
				}
				c.state.Store(callReleased)
				return true
			}
		case callActive:
			if c.state.CompareAndSwap(callActive, callReleasing) {
				c.releaseActive()
				c.state.Store(callReleased)
				return true
			}
		case callActivating:
			if c.state.CompareAndSwap(callActivating, callReleasePending) {
				return true
			}
		default: // none, releasePending, releasing, released
			return false
		}
	}
}

// finishActivate ends an Activate whose counters are moved: activating ->
// active, unless a Release won meanwhile (activating -> releasePending), in
// which case the release is ours to complete.
func (c *Call) finishActivate() bool {
	if c.state.CompareAndSwap(callActivating, callActive) {
		return true
	}
	c.releaseActive()
	c.state.Store(callReleased)
	return false
}

func (c *Call) releaseActive() {
	if c.conn != nil {
		c.conn.ReleaseActive()
	}
	if c.server != nil {
		c.server.ReleaseActive()
	}
}

// Reset makes a released (or never reserved) Call fresh for reuse. Call it
// only when no other goroutine can still touch the Call (every Release that
// may race has returned). It panics if the Call still holds capacity.
func (c *Call) Reset() {
	switch s := c.state.Load(); s {
	case callNone, callReleased:
		c.conn, c.server = nil, nil
		c.state.Store(callNone)
	default:
		panic("governor: Call.Reset of a Call in state " + callStateName(s) + " (Release it first)")
	}
}
