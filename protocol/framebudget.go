package protocol

import (
	"errors"
	"sync/atomic"
)

// ErrFrameBudget is the error of a [Reader] whose budget cannot cover the
// frame arriving: the bytes the Readers sharing the budget hold for large
// frames reached its limit. It is not a protocol violation: the peer sent
// a legal frame the process cannot hold now.
var ErrFrameBudget = errors.New("sluice/protocol: the budget for large frames in transit is spent")

// FrameBudget bounds the bytes that the Readers sharing it (the
// connections of one server, say) hold for frames larger than their
// read-ahead, from the first byte until the frame is complete, and for as
// long after as a caller that took the charge ([Reader.TakeCharge]) keeps
// it. It is safe for concurrent use and never blocks.
type FrameBudget struct {
	limit int64
	used  atomic.Int64
}

// NewFrameBudget returns a budget of limit bytes (limit > 0).
func NewFrameBudget(limit int64) *FrameBudget {
	if limit <= 0 {
		panic("sluice/protocol: NewFrameBudget with a limit <= 0")
	}
	return &FrameBudget{limit: limit}
}

// TryAcquire takes n bytes if they fit under the limit and reports whether
// it did.
func (b *FrameBudget) TryAcquire(n int64) bool {
	for {
		u := b.used.Load()
		if u+n > b.limit {
			return false
		}
		if b.used.CompareAndSwap(u, u+n) {
			return true
		}
	}
}

// Release gives back n bytes taken with TryAcquire (or handed over by
// TakeCharge); each byte is given back once.
func (b *FrameBudget) Release(n int64) {
	if b.used.Add(-n) < 0 {
		panic("sluice/protocol: FrameBudget released more than was taken")
	}
}

// InUse is the bytes taken now.
func (b *FrameBudget) InUse() int64 { return b.used.Load() }

// Limit is the budget's bound.
func (b *FrameBudget) Limit() int64 { return b.limit }
