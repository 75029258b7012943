package conngate

import (
	"net/netip"
	"sync/atomic"
)

// Slot bits.
const (
	slotAdmitted  uint32 = 1 << iota // Admit succeeded (sticky until Reset)
	slotConn                         // holds a connection slot
	slotHandshake                    // holds a handshake slot
	slotAddr                         // holds a handshake of its source key (with slotHandshake)
)

// Slot is one connection's admission state, to embed in the server's
// connection struct (it allocates nothing). Admit takes a connection slot
// and a handshake slot (AdmitFrom also a handshake of the connection's
// source address); HandshakeDone returns the handshake slot (and the
// address's handshake) and Release returns whatever is still held, each
// exactly once: both are idempotent, safe to call concurrently with each
// other from any goroutine, and do nothing on a slot that was never
// admitted. What a Slot gives back is what its Admit took, whatever the
// limits are by then. Admit, AdmitFrom and Reset belong to the
// connection's owner (the accept loop).
//
// The zero value is a fresh Slot.
type Slot struct {
	state atomic.Uint32
	gate  *Gate
	key   netip.Addr // source key, valid when slotAddr was taken
}

// Admit admits the connection on g without a source address (it is not
// bounded per address): see [Slot.AdmitFrom].
func (s *Slot) Admit(g *Gate) Reason { return s.AdmitFrom(g, netip.Addr{}) }

// AdmitFrom admits the connection from addr on g, taking one connection
// slot, one handshake slot and, when addr is valid, one handshake of its
// source key ([SourceKey]) in one step, and returns ReasonNone; or refuses
// it, takes nothing, counts the refusal and returns its reason (the caller
// closes the connection inline). A refused Slot stays fresh. AdmitFrom
// never blocks. It panics if the Slot was already admitted.
func (s *Slot) AdmitFrom(g *Gate, addr netip.Addr) Reason {
	if s.state.Load()&slotAdmitted != 0 {
		panic("conngate: Slot.Admit on a Slot already admitted (Reset it after Release before reuse)")
	}
	key := SourceKey(addr)
	if r := g.tryAdmit(key); r != ReasonNone {
		return r
	}
	s.gate, s.key = g, key
	st := slotAdmitted | slotConn | slotHandshake
	if key.IsValid() {
		st |= slotAddr
	}
	s.state.Store(st)
	return ReasonNone
}

// HandshakeDone returns the handshake slot (and the address's handshake)
// at the Ready transition and reports whether it did; the connection slot
// stays held. It returns false and does nothing if the slot holds no
// handshake slot (never admitted, already done, or released).
func (s *Slot) HandshakeDone() bool {
	for {
		st := s.state.Load()
		if st&slotHandshake == 0 {
			return false
		}
		if s.state.CompareAndSwap(st, st&^(slotHandshake|slotAddr)) {
			s.gate.release(hsOne, st&slotAddr != 0, s.key)
			return true
		}
	}
}

// Release returns everything the slot still holds (the connection slot
// and, if HandshakeDone never ran, the handshake slot and the address's
// handshake) at terminal cleanup, and reports whether it returned
// anything. Later calls return false and do nothing.
func (s *Slot) Release() bool {
	for {
		st := s.state.Load()
		held := st & (slotConn | slotHandshake | slotAddr)
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
			s.gate.release(slots, held&slotAddr != 0, s.key)
			return true
		}
	}
}

// Reset makes a released (or never admitted) Slot fresh for reuse. Call it
// only when no other goroutine can still touch the Slot. It panics if the
// Slot still holds a slot.
func (s *Slot) Reset() {
	if s.state.Load()&(slotConn|slotHandshake|slotAddr) != 0 {
		panic("conngate: Slot.Reset of a Slot that still holds slots (Release it first)")
	}
	s.gate, s.key = nil, netip.Addr{}
	s.state.Store(0)
}
