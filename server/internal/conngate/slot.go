package conngate

import "sync/atomic"

// Slot bits.
const (
	slotAdmitted  uint32 = 1 << iota // Admit succeeded (sticky until Reset)
	slotConn                         // holds a connection slot
	slotHandshake                    // holds a handshake slot
)

// Slot is one connection's admission state, to embed in the server's
// connection struct (it allocates nothing). Admit takes a connection slot
// and a handshake slot; HandshakeDone returns the handshake slot and
// Release returns whatever is still held, each exactly once: both are
// idempotent, safe to call concurrently with each other from any
// goroutine, and do nothing on a slot that was never admitted. Admit and
// Reset belong to the connection's owner (the accept loop).
//
// The zero value is a fresh Slot.
type Slot struct {
	state atomic.Uint32
	gate  *Gate
}

// Admit admits the connection on g, taking one connection slot and one
// handshake slot in one atomic step, and returns ReasonNone; or refuses it,
// takes nothing, counts the refusal and returns its reason (the caller
// closes the connection inline). A refused Slot stays fresh. Admit never
// blocks. It panics if the Slot was already admitted.
func (s *Slot) Admit(g *Gate) Reason {
	if s.state.Load()&slotAdmitted != 0 {
		panic("conngate: Slot.Admit on a Slot already admitted (Reset it after Release before reuse)")
	}
	if r := g.tryAdmit(); r != ReasonNone {
		return r
	}
	s.gate = g
	s.state.Store(slotAdmitted | slotConn | slotHandshake)
	return ReasonNone
}

// HandshakeDone returns the handshake slot at the Ready transition and
// reports whether it did; the connection slot stays held. It returns false
// and does nothing if the slot holds no handshake slot (never admitted,
// already done, or released).
func (s *Slot) HandshakeDone() bool {
	for {
		st := s.state.Load()
		if st&slotHandshake == 0 {
			return false
		}
		if s.state.CompareAndSwap(st, st&^slotHandshake) {
			s.gate.release(hsOne)
			return true
		}
	}
}

// Release returns everything the slot still holds (the connection slot
// and, if HandshakeDone never ran, the handshake slot) at terminal cleanup,
// and reports whether it returned anything. Later calls return false and do
// nothing.
func (s *Slot) Release() bool {
	for {
		st := s.state.Load()
		held := st & (slotConn | slotHandshake)
		if held == 0 {
			return false
		}
		if s.state.CompareAndSwap(st, st&^held) {
			var slots uint64
			if held&slotConn != 0 {
				slots |= connOne
			}
			if held&slotHandshake != 0 {
				slots |= hsOne
			}
			s.gate.release(slots)
			return true
		}
	}
}

// Reset makes a released (or never admitted) Slot fresh for reuse. Call it
// only when no other goroutine can still touch the Slot. It panics if the
// Slot still holds a slot.
func (s *Slot) Reset() {
	if s.state.Load()&(slotConn|slotHandshake) != 0 {
		panic("conngate: Slot.Reset of a Slot that still holds slots (Release it first)")
	}
	s.gate = nil
	s.state.Store(0)
}
