package kernel

import (
	"fmt"
	"sync/atomic"
)

// Cell publishes values to readers that capture them with a lease. A value
// replaced by a later publication is retired: it accepts no new leases, and
// its drain callback runs exactly once, when it is retired and its last lease
// has ended (at once if it had none).
//
// Readers call [Cell.Acquire] and [Lease.Release]; both are lock-free and
// touch one of several lease counters chosen by a hint, so readers on
// different cores do not contend on one cache line. Writers
// ([Cell.Publish], [Cell.Clear]) must be serialized by the caller. The zero
// Cell is empty and ready to use.
type Cell[T any] struct {
	cur atomic.Pointer[Generation[T]]
}

// leaseShards is the number of lease counters per generation (a power of
// two).
const leaseShards = 8

// Generation is one published value with its lease counters.
type Generation[T any] struct {
	value   T
	number  uint64
	onDrain func(T)

	retired atomic.Bool
	drained atomic.Bool
	_       [64]byte // keep the counters off the read-mostly fields' line
	shards  [leaseShards]paddedCount
}

type paddedCount struct {
	n atomic.Int64
	_ [56]byte
}

// Lease is one reader's hold on a generation. It is a small value the
// reader keeps (for example in its per-call state) and releases exactly
// once.
type Lease[T any] struct {
	g     *Generation[T]
	shard uint32
}

// Generation returns the leased generation (nil for the zero Lease).
func (l Lease[T]) Generation() *Generation[T] { return l.g }

// Value returns the leased value.
func (l Lease[T]) Value() T { return l.g.value }

// Value returns the published value.
func (g *Generation[T]) Value() T { return g.value }

// Number returns the generation number given at publication.
func (g *Generation[T]) Number() uint64 { return g.number }

// Leases returns the number of leases held now (a sum over the counters;
// exact only when no lease is being taken or released).
func (g *Generation[T]) Leases() int64 {
	var n int64
	for i := range g.shards {
		n += g.shards[i].n.Load()
	}
	return n
}

// Retired reports whether a later publication (or Clear) replaced g.
func (g *Generation[T]) Retired() bool { return g.retired.Load() }

// Drained reports whether g's drain callback has run.
func (g *Generation[T]) Drained() bool { return g.drained.Load() }

// Acquire returns a lease on the current generation, and false when the
// cell is empty. hint spreads readers over the lease counters: pass
// something that differs between concurrent readers and is cheap to get,
// such as the address of the reader's per-call state. A generation retired
// between the load and the lease is never leased: Acquire then retries on
// the newer one.
func (c *Cell[T]) Acquire(hint uintptr) (Lease[T], bool) {
	shard := uint32((uint64(hint) * 0x9E3779B97F4A7C15) >> (64 - 3))
	for {
		g := c.cur.Load()
		if g == nil {
			return Lease[T]{}, false
		}
		s := &g.shards[shard]
		s.n.Add(1)
		if !g.retired.Load() {
			return Lease[T]{g: g, shard: shard}, true
		}
		// Retired between the load and the increment: undo, and let
		// the undo finish a drain it may have delayed.
		s.n.Add(-1)
		g.maybeDrain()
	}
}

// Release ends the lease. The release that ends the last lease of a
// retired generation runs its drain callback, on the calling goroutine.
// Releasing a lease twice is a caller bug that corrupts the count; callers
// guard it (Permit does, with a compare-and-swap).
func (l Lease[T]) Release() {
	g := l.g
	if n := g.shards[l.shard].n.Add(-1); n < 0 {
		panic(fmt.Sprintf("kernel: generation %d released more leases than were acquired", g.number))
	}
	if g.retired.Load() {
		g.maybeDrain()
	}
}

// maybeDrain runs the drain callback once the generation is retired and no
// lease remains. The sum over the counters is not one atomic read, but it
// cannot miss a live lease: a successful lease is counted before its
// Acquire saw the generation unretired, so before retirement, and so before
// any sum that decides the drain; leases that fail only ever add
// transiently, and re-check after undoing.
func (g *Generation[T]) maybeDrain() {
	if g.drained.Load() || g.Leases() != 0 {
		return
	}
	if g.drained.CompareAndSwap(false, true) && g.onDrain != nil {
		g.onDrain(g.value)
	}
}

// Load returns the current generation without a lease (nil when empty).
// Writers use it; readers that use the value must Acquire instead.
func (c *Cell[T]) Load() *Generation[T] { return c.cur.Load() }

// Publish makes v the current value under number and retires the previous
// generation. onDrain (may be nil) runs exactly once for v, when v has been
// retired and its last lease has ended. It must not block and must not call
// Publish or Clear. Publish returns the new generation.
func (c *Cell[T]) Publish(v T, number uint64, onDrain func(T)) *Generation[T] {
	g := &Generation[T]{value: v, number: number, onDrain: onDrain}
	if old := c.cur.Swap(g); old != nil {
		old.retire()
	}
	return g
}

// Clear empties the cell and retires the previous generation.
func (c *Cell[T]) Clear() {
	if old := c.cur.Swap(nil); old != nil {
		old.retire()
	}
}

func (g *Generation[T]) retire() {
	if g.retired.Swap(true) {
		panic(fmt.Sprintf("kernel: generation %d retired twice", g.number))
	}
	g.maybeDrain()
}
