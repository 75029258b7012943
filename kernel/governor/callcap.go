package governor

import (
	"fmt"
	"sync/atomic"
)

// MaxCallCapacity is the largest capacity a [CallCapacity] accepts. Use it
// for a level that is effectively unlimited: each of capacity, active and
// reserved is a 21-bit field of one atomic word.
const MaxCallCapacity = 1<<callCapBits - 1

const (
	callCapBits   = 21
	callCapMask   = 1<<callCapBits - 1
	activeShift   = callCapBits
	reservedShift = 2 * callCapBits
	activeOne     = uint64(1) << activeShift
	reservedOne   = uint64(1) << reservedShift
)

// CallCapacity bounds the calls of one level (a connection or the whole
// server) in two phases: a call first holds a reservation (taken before any
// decode of its request, so a refused request costs no decompression), then
// an active slot (from the moment its handler starts) until it is released.
//
// Capacity, active and reserved live in one atomic word, so the invariant
//
//	active + reserved <= capacity
//
// holds for every grant: TryReserve succeeds only by a compare-and-swap of
// the word it checked, against the capacity in force in that word.
// SetCapacity changes the capacity in the same word and never revokes: after
// a shrink below the current usage nothing is cancelled, and new
// reservations are refused until active+reserved is under the new capacity.
//
// Nothing blocks; every method is lock-free and allocates nothing. The
// counters are owned by the callers that were granted them: each granted
// reservation must end in exactly one Activate followed by one
// ReleaseActive, or in one ReleaseReserved. [Call] does that bookkeeping for
// a call spanning a connection and a server. Misuse that would underflow a
// counter panics and leaves the word unchanged.
//
// The zero value is not usable; construct with [NewCallCapacity].
type CallCapacity struct {
	word atomic.Uint64 // capacity | active<<21 | reserved<<42
}

// CallCapacitySnapshot is one consistent reading of a [CallCapacity] word.
type CallCapacitySnapshot struct {
	Capacity int
	Active   int
	Reserved int
}

// NewCallCapacity returns a CallCapacity with no active or reserved calls.
// It panics unless 1 <= capacity <= [MaxCallCapacity].
func NewCallCapacity(capacity int) *CallCapacity {
	checkCallCapacity("NewCallCapacity", capacity)
	c := &CallCapacity{}
	c.word.Store(uint64(capacity))
	return c
}

func checkCallCapacity(op string, n int) {
	if n < 1 || n > MaxCallCapacity {
		panic(fmt.Sprintf("governor: %s: call capacity %d out of range [1, %d]", op, n, MaxCallCapacity))
	}
}

func unpackCallCap(w uint64) (capacity, active, reserved uint64) {
	return w & callCapMask, (w >> activeShift) & callCapMask, (w >> reservedShift) & callCapMask
}

// TryReserve takes one reservation if active+reserved is below the capacity
// in force and reports whether it did. It never blocks.
func (c *CallCapacity) TryReserve() bool {
	for {
		w := c.word.Load()
		capacity, active, reserved := unpackCallCap(w)
		if active+reserved >= capacity {
			return false
		}
		if c.word.CompareAndSwap(w, w+reservedOne) {
			return true
		}
	}
}

// Activate turns one reservation into an active call; active+reserved does
// not change. It panics if no reservation is held.
func (c *CallCapacity) Activate() {
	for {
		w := c.word.Load()
		if _, _, reserved := unpackCallCap(w); reserved == 0 {
			panic("governor: Activate without a reservation")
		}
		if c.word.CompareAndSwap(w, w-reservedOne+activeOne) {
			return
		}
	}
}

// ReleaseReserved returns one reservation that was never activated. It
// panics if no reservation is held.
func (c *CallCapacity) ReleaseReserved() {
	for {
		w := c.word.Load()
		if _, _, reserved := unpackCallCap(w); reserved == 0 {
			panic("governor: ReleaseReserved without a reservation")
		}
		if c.word.CompareAndSwap(w, w-reservedOne) {
			return
		}
	}
}

// ReleaseActive returns one active call. It panics if no call is active.
func (c *CallCapacity) ReleaseActive() {
	for {
		w := c.word.Load()
		if _, active, _ := unpackCallCap(w); active == 0 {
			panic("governor: ReleaseActive without an active call")
		}
		if c.word.CompareAndSwap(w, w-activeOne) {
			return
		}
	}
}

// SetCapacity changes the capacity live. Growing admits exactly the
// difference; shrinking below the current usage revokes nothing and refuses
// new reservations until active+reserved < n. A reservation racing the
// change is checked against whichever capacity its compare-and-swap saw. It
// panics unless 1 <= n <= [MaxCallCapacity].
func (c *CallCapacity) SetCapacity(n int) {
	checkCallCapacity("SetCapacity", n)
	for {
		w := c.word.Load()
		if c.word.CompareAndSwap(w, w&^uint64(callCapMask)|uint64(n)) {
			return
		}
	}
}

// Snapshot returns the capacity and counts from one load of the word.
func (c *CallCapacity) Snapshot() CallCapacitySnapshot {
	capacity, active, reserved := unpackCallCap(c.word.Load())
	return CallCapacitySnapshot{Capacity: int(capacity), Active: int(active), Reserved: int(reserved)}
}
