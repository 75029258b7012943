package governor

import (
	"sync"
	"sync/atomic"
)

// ConnCapacities applies one per-connection call bound to every live
// connection and changes it at runtime. Each connection gets its own
// [CallCapacity] from Open and gives it back with Close.
//
// Open, Close and SetCapacity take a mutex; they run on the connection and
// control paths, never on the request path, which only touches the returned
// CallCapacity. Because Open creates and registers a connection's capacity
// under the same mutex that SetCapacity holds while it stores the bound and
// updates every registered connection, the two converge: a connection opened
// concurrently with SetCapacity(n) ends up with capacity n, whichever goes
// first. A bound change never revokes calls (see [CallCapacity.SetCapacity]).
//
// The zero value is not usable; construct with [NewConnCapacities].
type ConnCapacities struct {
	mu    sync.Mutex
	bound atomic.Int64 // written under mu; read without it by Capacity
	live  atomic.Int64 // len(conns), written under mu; read without it by OverShare
	conns map[*CallCapacity]struct{}
}

// NewConnCapacities returns a ConnCapacities with no connections and the
// given per-connection bound. It panics unless 1 <= perConn <=
// [MaxCallCapacity].
func NewConnCapacities(perConn int) *ConnCapacities {
	checkCallCapacity("NewConnCapacities", perConn)
	cc := &ConnCapacities{conns: make(map[*CallCapacity]struct{})}
	cc.bound.Store(int64(perConn))
	return cc
}

// Open creates and registers the capacity of a new connection, with the
// current bound.
func (cc *ConnCapacities) Open() *CallCapacity {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	c := NewCallCapacity(int(cc.bound.Load()))
	cc.conns[c] = struct{}{}
	cc.live.Store(int64(len(cc.conns)))
	return c
}

// Close unregisters a connection's capacity: later bound changes no longer
// reach it. Calls still holding it may keep releasing into it. It panics if
// c was not opened by cc or was already closed.
func (cc *ConnCapacities) Close(c *CallCapacity) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if _, ok := cc.conns[c]; !ok {
		panic("governor: ConnCapacities.Close of a CallCapacity not opened by it, or closed twice")
	}
	delete(cc.conns, c)
	cc.live.Store(int64(len(cc.conns)))
}

// SetCapacity changes the per-connection bound and applies it to every
// registered connection. It panics unless 1 <= n <= [MaxCallCapacity].
func (cc *ConnCapacities) SetCapacity(n int) {
	checkCallCapacity("ConnCapacities.SetCapacity", n)
	cc.mu.Lock()
	defer cc.mu.Unlock()
	cc.bound.Store(int64(n))
	for c := range cc.conns {
		c.SetCapacity(n)
	}
}

// OverShare reports whether conn, a connection's capacity from Open, must
// be refused a new call to keep a few connections from holding all of
// server's capacity: the server is contended (it has free capacity, but
// less than the per-connection bound, so that one more connection at the
// bound could not be served) and conn already holds its fair share (the
// server's capacity over the live connections, at least 1). A full server
// is not a share matter: Reserve refuses at LevelServer. A server
// checks it before [Call.Reserve]: under contention, the slots that
// connections over their share give back go to connections under it,
// and connections converge to their shares; without contention every
// connection may use up to its own bound.
//
// It is a soft rule: it reads three atomic words, not one, so racing
// reservations may each pass it; the hard bounds stay those of the two
// CallCapacity levels. It allocates nothing and never blocks.
func (cc *ConnCapacities) OverShare(conn, server *CallCapacity) bool {
	sv := server.Snapshot()
	free := sv.Capacity - sv.Active - sv.Reserved
	if free <= 0 || free >= int(cc.bound.Load()) {
		return false // full (the server level refuses), or room for a whole connection more
	}
	share := sv.Capacity / int(max(cc.live.Load(), 1))
	held := conn.Snapshot()
	return held.Active+held.Reserved >= max(share, 1)
}

// Capacity returns the current per-connection bound.
func (cc *ConnCapacities) Capacity() int { return int(cc.bound.Load()) }

// Len returns the number of registered (open, not closed) connections.
func (cc *ConnCapacities) Len() int {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return len(cc.conns)
}
