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
// Readers call [Cell.Acquire] and [Generation.Release]; both are lock-free.
// Writers ([Cell.Publish], [Cell.Clear]) must be serialized by the caller.
// The zero Cell is empty and ready to use.
type Cell[T any] struct {
	cur atomic.Pointer[Generation[T]]
}

// Generation is one published value with its lease count.
type Generation[T any] struct {
	value   T
	number  uint64
	onDrain func(T)
	// word is leases<<1 | retiredBit.
	word atomic.Int64
}

const retiredBit = 1

// Value returns the published value. It may be read while the caller holds
// a lease, or on the writer's side.
func (g *Generation[T]) Value() T { return g.value }

// Number returns the generation number given at publication.
func (g *Generation[T]) Number() uint64 { return g.number }

// Leases returns the number of leases held now.
func (g *Generation[T]) Leases() int64 { return g.word.Load() >> 1 }

// Retired reports whether a later publication (or Clear) replaced g.
func (g *Generation[T]) Retired() bool { return g.word.Load()&retiredBit != 0 }

// Acquire returns the current generation with one more lease on it, or nil
// when the cell is empty. A generation retired between the load and the
// lease is never leased: Acquire then retries on the newer one, so a
// retired generation's lease count only goes down.
func (c *Cell[T]) Acquire() *Generation[T] {
	for {
		g := c.cur.Load()
		if g == nil {
			return nil
		}
		if g.tryLease() {
			return g
		}
	}
}

func (g *Generation[T]) tryLease() bool {
	for {
		w := g.word.Load()
		if w&retiredBit != 0 {
			return false
		}
		if g.word.CompareAndSwap(w, w+2) {
			return true
		}
	}
}

// Release ends one lease. The release that ends the last lease of a retired
// generation runs its drain callback, on the calling goroutine. Releasing
// more leases than were acquired panics.
func (g *Generation[T]) Release() {
	w := g.word.Add(-2)
	switch {
	case w == retiredBit:
		g.drain()
	case w < 0:
		panic(fmt.Sprintf("kernel: generation %d released more leases than were acquired", g.number))
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
	old := g.word.Or(retiredBit)
	if old&retiredBit != 0 {
		panic(fmt.Sprintf("kernel: generation %d retired twice", g.number))
	}
	if old == 0 {
		g.drain()
	}
}

func (g *Generation[T]) drain() {
	if g.onDrain != nil {
		g.onDrain(g.value)
	}
}
