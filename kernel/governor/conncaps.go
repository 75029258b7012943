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

// Capacity returns the current per-connection bound.
func (cc *ConnCapacities) Capacity() int { return int(cc.bound.Load()) }

// Len returns the number of registered (open, not closed) connections.
func (cc *ConnCapacities) Len() int {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return len(cc.conns)
}
