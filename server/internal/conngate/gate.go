package conngate

import (
	"strconv"
	"sync/atomic"
)

// Reason says why [Slot.Admit] refused a connection.
type Reason uint8

const (
	// ReasonNone: the connection was admitted.
	ReasonNone Reason = iota
	// ReasonConnectionLimit: MaxConnections connections are alive.
	ReasonConnectionLimit
	// ReasonHandshakeLimit: MaxHandshakes connections are in handshake.
	ReasonHandshakeLimit
)

// String returns the metrics name: "none", "connection_limit" or
// "handshake_limit".
func (r Reason) String() string {
	switch r {
	case ReasonNone:
		return "none"
	case ReasonConnectionLimit:
		return "connection_limit"
	case ReasonHandshakeLimit:
		return "handshake_limit"
	}
	return "Reason(" + strconv.Itoa(int(r)) + ")"
}

// Stats are the gate's counts and counters, each read atomically (the set
// is not one snapshot).
type Stats struct {
	// Connections and Handshakes are the slots held now.
	Connections, Handshakes int
	// Admitted and the Rejected counters count Admit outcomes since New.
	Admitted, RejectedConnectionLimit, RejectedHandshakeLimit uint64
}

// The two counts share one word so that admission takes both slots with
// one compare-and-swap: connections in the low half, handshakes in the high
// half. The limits are packed the same way (MaxConnections low, the
// configured MaxHandshakes high) so a reader never sees half of an update.
const (
	connOne   = uint64(1)
	hsOne     = uint64(1) << 32
	halfMask  = uint64(1)<<32 - 1
	bothSlots = connOne | hsOne
)

func packLimits(l Limits) uint64 { return uint64(l.MaxConnections) | uint64(l.MaxHandshakes)<<32 }

func unpackLimits(w uint64) Limits {
	return Limits{MaxConnections: int(w & halfMask), MaxHandshakes: int(w >> 32)}
}

// Gate counts admitted connections and connections in handshake against
// live [Limits]. Admission and release go through a [Slot] per connection;
// every method is non-blocking and allocates nothing.
//
// Limits are read from an atomic word on every admission attempt. A
// SetLimits racing an Admit is benign: the Admit is checked against the
// limits it loaded, old or new, so at most the Admits already in flight
// when the limits drop can be granted against the previous bounds. Lowering
// the limits closes nothing: existing connections stay, and new ones are
// refused until the counts are under the new bounds.
//
// The zero value is not usable; construct with [New].
type Gate struct {
	counts atomic.Uint64 // connections | handshakes<<32
	limits atomic.Uint64 // MaxConnections | MaxHandshakes<<32

	admitted, rejectedConn, rejectedHandshake atomic.Uint64
}

// New returns a Gate with the given limits, or the validation error.
func New(l Limits) (*Gate, error) {
	if err := l.Validate(); err != nil {
		return nil, err
	}
	g := &Gate{}
	g.limits.Store(packLimits(l))
	return g, nil
}

// SetLimits replaces the limits live. Invalid limits change nothing and
// return the validation error.
func (g *Gate) SetLimits(l Limits) error {
	if err := l.Validate(); err != nil {
		return err
	}
	g.limits.Store(packLimits(l))
	return nil
}

// Limits returns the limits in force, as configured (MaxHandshakes 0 stays
// 0).
func (g *Gate) Limits() Limits { return unpackLimits(g.limits.Load()) }

// Stats returns the current counts and the admission counters.
func (g *Gate) Stats() Stats {
	w := g.counts.Load()
	return Stats{
		Connections:             int(w & halfMask),
		Handshakes:              int(w >> 32),
		Admitted:                g.admitted.Load(),
		RejectedConnectionLimit: g.rejectedConn.Load(),
		RejectedHandshakeLimit:  g.rejectedHandshake.Load(),
	}
}

// tryAdmit takes one connection slot and one handshake slot atomically, or
// reports which bound refused.
func (g *Gate) tryAdmit() Reason {
	for {
		l := unpackLimits(g.limits.Load())
		w := g.counts.Load()
		if int(w&halfMask) >= l.MaxConnections {
			g.rejectedConn.Add(1)
			return ReasonConnectionLimit
		}
		if int(w>>32) >= l.effectiveHandshakes() {
			g.rejectedHandshake.Add(1)
			return ReasonHandshakeLimit
		}
		if g.counts.CompareAndSwap(w, w+bothSlots) {
			g.admitted.Add(1)
			return ReasonNone
		}
	}
}

// release returns slots; the caller (a Slot) guarantees it holds them.
func (g *Gate) release(slots uint64) { g.counts.Add(-slots) }
