package governor

import (
	"fmt"
	"math"
	"sync/atomic"
)

// Budget bounds one server-wide quantity that requests hold for a while:
// concurrent decodes, retained compressed bytes, decoded bytes in flight,
// pre-admission stream bytes. A request takes n units with TryAcquire
// before the work they pay for and gives them back with Release, exactly
// once ([Holding] does the bookkeeping for a request).
//
// The usage and the limit are two atomic words: TryAcquire succeeds only by
// a compare-and-swap of the usage it checked against the limit it read, so
// the usage never passes a limit that was in force when the units were
// taken (a SetLimit racing it is ordered before or after, as with call
// capacity). SetLimit never
// revokes: after a shrink below the usage nothing is taken back and new
// acquisitions are refused until the usage is under the new limit (the
// semantics of call capacity).
//
// Only Acquire blocks; every other method is lock-free and allocates
// nothing. Misuse
// that would make the usage negative panics and leaves it unchanged.
//
// The zero value is not usable; construct with [NewBudget].
type Budget struct {
	name  string
	used  atomic.Int64
	limit atomic.Int64
	wait  budgetQueue // Acquire's waiters, FIFO
}

// BudgetSnapshot is one reading of a [Budget] (used and limit are read one
// after the other).
type BudgetSnapshot struct {
	Used, Limit int64
}

// NewBudget returns a Budget called name (for messages: "decodes",
// "decoded bytes", ...) bounding its usage to limit >= 1.
func NewBudget(name string, limit int64) *Budget {
	checkBudgetLimit(name, "NewBudget", limit)
	b := &Budget{name: name}
	b.limit.Store(limit)
	return b
}

func checkBudgetLimit(name, op string, limit int64) {
	if limit < 1 {
		panic(fmt.Sprintf("governor: %s(%s): limit %d below 1", op, name, limit))
	}
}

// Name is the budget's name.
func (b *Budget) Name() string { return b.name }

// TryAcquire takes n >= 1 units if the usage plus n stays within the
// limit in force and reports whether it did. It never blocks.
func (b *Budget) TryAcquire(n int64) bool {
	if n < 1 {
		panic(fmt.Sprintf("governor: %s: TryAcquire(%d): n below 1", b.name, n))
	}
	for {
		used, limit := b.used.Load(), b.limit.Load()
		if n > limit-used || used > math.MaxInt64-n {
			return false
		}
		if b.used.CompareAndSwap(used, used+n) {
			return true
		}
	}
}

// Release gives back n units taken with TryAcquire. Giving back more than
// is held panics: a caller released twice.
func (b *Budget) Release(n int64) {
	if n < 0 {
		panic(fmt.Sprintf("governor: %s: Release(%d): n below 0", b.name, n))
	}
	for {
		used := b.used.Load()
		if n > used {
			panic(fmt.Sprintf("governor: %s: Release(%d) with %d held (released twice?)", b.name, n, used))
		}
		if b.used.CompareAndSwap(used, used-n) {
			b.wait.grant(b)
			return
		}
	}
}

// SetLimit changes the limit live; lowering it revokes nothing.
func (b *Budget) SetLimit(limit int64) {
	checkBudgetLimit(b.name, "SetLimit", limit)
	b.limit.Store(limit)
	b.wait.grant(b)
}

// Snapshot reads the usage and the limit.
func (b *Budget) Snapshot() BudgetSnapshot {
	return BudgetSnapshot{Used: b.used.Load(), Limit: b.limit.Load()}
}
