package conngate

import (
	"net/netip"
	"strconv"
	"sync"
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
	// ReasonHandshakePerAddress: MaxHandshakesPerAddress connections from
	// the same source address are in handshake.
	ReasonHandshakePerAddress

	// ReasonCount is the number of reasons, for arrays indexed by Reason.
	ReasonCount
)

// String returns the metrics name: "none", "connection_limit",
// "handshake_limit" or "handshake_per_address".
func (r Reason) String() string {
	switch r {
	case ReasonNone:
		return "none"
	case ReasonConnectionLimit:
		return "connection_limit"
	case ReasonHandshakeLimit:
		return "handshake_limit"
	case ReasonHandshakePerAddress:
		return "handshake_per_address"
	}
	return "Reason(" + strconv.Itoa(int(r)) + ")"
}

// Stats are the gate's counts and counters, each read atomically (the set
// is not one snapshot).
type Stats struct {
	// Connections and Handshakes are the slots held now.
	Connections, Handshakes int
	// HandshakeAddresses is the number of source addresses with at least
	// one connection in handshake (the entries of the per-address table).
	HandshakeAddresses int
	// Admitted and the Rejected counters count Admit outcomes since New.
	Admitted, RejectedConnectionLimit, RejectedHandshakeLimit uint64
	RejectedHandshakePerAddress                               uint64
}

// The two counts share one word so that admission takes both slots with
// one compare-and-swap: connections in the low half, handshakes in the high
// half.
const (
	connOne   = uint64(1)
	hsOne     = uint64(1) << 32
	halfMask  = uint64(1)<<32 - 1
	bothSlots = connOne | hsOne
)

// Gate counts admitted connections, connections in handshake, and
// connections in handshake per source address, against live [Limits].
// Admission and release go through a [Slot] per connection; every method
// is non-blocking (the per-address table is guarded by a mutex held for a
// map lookup and an update, never across anything that blocks).
//
// The connection and handshake counts share one atomic word; admitting
// without an address ([Slot.Admit]) touches nothing else and allocates
// nothing. Admitting with an address ([Slot.AdmitFrom]) also counts the
// connection in the per-address table under its mutex, keyed by
// [netip.Addr] (no allocation once the table has room); an entry exists
// only while its count is above zero, so the table holds at most as many
// entries as connections in handshake.
//
// Limits are read atomically (one pointer) on every admission attempt. A
// SetLimits racing an Admit is benign: the Admit is checked against the
// limits it loaded, old or new, so at most the Admits already in flight
// when the limits drop can be granted against the previous bounds. Lowering
// the limits closes nothing: existing connections stay, and new ones are
// refused until the counts are under the new bounds. What a Slot took is
// what it gives back, whatever the limits are by then.
//
// The zero value is not usable; construct with [New].
type Gate struct {
	counts atomic.Uint64 // connections | handshakes<<32
	limits atomic.Pointer[Limits]

	addrMu sync.Mutex
	addrs  map[netip.Addr]int32 // in handshake per source key; no zero entries

	admitted atomic.Uint64
	rejected [ReasonCount]atomic.Uint64
}

// New returns a Gate with the given limits, or the validation error.
func New(l Limits) (*Gate, error) {
	if err := l.Validate(); err != nil {
		return nil, err
	}
	g := &Gate{addrs: make(map[netip.Addr]int32)}
	g.limits.Store(&l)
	return g, nil
}

// SetLimits replaces the limits live. Invalid limits change nothing and
// return the validation error.
func (g *Gate) SetLimits(l Limits) error {
	if err := l.Validate(); err != nil {
		return err
	}
	g.limits.Store(&l)
	return nil
}

// Limits returns the limits in force, as configured (a 0 bound stays 0).
func (g *Gate) Limits() Limits { return *g.limits.Load() }

// Stats returns the current counts and the admission counters.
func (g *Gate) Stats() Stats {
	w := g.counts.Load()
	g.addrMu.Lock()
	addrs := len(g.addrs)
	g.addrMu.Unlock()
	return Stats{
		Connections:                 int(w & halfMask),
		Handshakes:                  int(w >> 32),
		HandshakeAddresses:          addrs,
		Admitted:                    g.admitted.Load(),
		RejectedConnectionLimit:     g.rejected[ReasonConnectionLimit].Load(),
		RejectedHandshakeLimit:      g.rejected[ReasonHandshakeLimit].Load(),
		RejectedHandshakePerAddress: g.rejected[ReasonHandshakePerAddress].Load(),
	}
}

// AddressHandshakes returns the connections in handshake from addr's
// source key ([SourceKey]); 0 for an invalid address.
func (g *Gate) AddressHandshakes(addr netip.Addr) int {
	key := SourceKey(addr)
	if !key.IsValid() {
		return 0
	}
	g.addrMu.Lock()
	defer g.addrMu.Unlock()
	return int(g.addrs[key])
}

// tryAdmit takes one connection slot and one handshake slot, and one
// handshake of key when key is valid, or reports which bound refused (the
// connection bound first, then the handshake bound, then the per-address
// bound).
func (g *Gate) tryAdmit(key netip.Addr) Reason {
	if !key.IsValid() {
		return g.tryAdmitCounts(false, 0)
	}
	// The per-address count is read, checked and incremented under the
	// mutex, around the CAS of the shared word: concurrent admissions from
	// one address (several accept loops) are serialized, so the count
	// never passes the bound.
	g.addrMu.Lock()
	defer g.addrMu.Unlock()
	n := g.addrs[key]
	r := g.tryAdmitCounts(true, int(n))
	if r == ReasonNone {
		g.addrs[key] = n + 1
	}
	return r
}

// tryAdmitCounts takes one connection slot and one handshake slot
// atomically unless a bound refuses; with checkAddr, addrHeld is the
// handshakes the connection's address holds, checked against the
// per-address bound loaded with the others.
func (g *Gate) tryAdmitCounts(checkAddr bool, addrHeld int) Reason {
	for {
		l := g.limits.Load()
		w := g.counts.Load()
		r := ReasonNone
		switch {
		case int(w&halfMask) >= l.MaxConnections:
			r = ReasonConnectionLimit
		case int(w>>32) >= l.effectiveHandshakes():
			r = ReasonHandshakeLimit
		case checkAddr && addrHeld >= l.effectivePerAddress():
			r = ReasonHandshakePerAddress
		}
		if r != ReasonNone {
			g.rejected[r].Add(1)
			return r
		}
		if g.counts.CompareAndSwap(w, w+bothSlots) {
			g.admitted.Add(1)
			return ReasonNone
		}
	}
}

// release returns slots of the shared word, and one handshake of key when
// addr is set; the caller (a Slot) guarantees it holds them. The
// per-address count goes first, so that the handshakes counted per address
// never exceed the handshakes counted in the word.
func (g *Gate) release(slots uint64, addr bool, key netip.Addr) {
	if addr {
		g.releaseAddr(key)
	}
	g.counts.Add(-slots)
}

func (g *Gate) releaseAddr(key netip.Addr) {
	g.addrMu.Lock()
	defer g.addrMu.Unlock()
	switch n := g.addrs[key]; {
	case n > 1:
		g.addrs[key] = n - 1
	case n == 1:
		delete(g.addrs, key)
	default:
		panic("conngate: per-address handshake count released below zero")
	}
}
