package spi

import "time"

// Class separates limiters that bound how many units are held at once from
// limiters that bound how many are taken per unit of time.
type Class uint8

const (
	// ClassConcurrency limiters count held units; Release returns them.
	// They do not depend on time: callers may pass the zero time.Time to
	// every method of a concurrency limiter.
	ClassConcurrency Class = iota + 1
	// ClassRate limiters count units taken over time; Release is a no-op
	// for them (taken quota stays taken), Cancel gives back quota that was
	// granted but never used.
	ClassRate
)

// String returns "concurrency" or "rate".
func (c Class) String() string {
	switch c {
	case ClassConcurrency:
		return "concurrency"
	case ClassRate:
		return "rate"
	}
	return "class(?)"
}

// Limiter is one unit of admission state: a concurrency budget, a token
// bucket, a window. Implementations must be safe for concurrent use, must not
// block in any method, and must never wait: a refused TryAcquire returns at
// once with a hint.
//
// The caller (sluice's kernel) guarantees that every unit it was granted is
// given back exactly once, by Release or by Cancel, and never more than it
// was granted. A concurrency limiter that is handed back more than it holds
// has found a caller bug and should panic with a precise message, as
// x/sync/semaphore does. A rate limiter clamps instead (a Cancel can
// legitimately meet units that a concurrent Reconfigure or Seal already
// moved into a barrier). No counter may ever go negative.
//
// Every method takes the current time explicitly; a concurrency limiter
// ignores it. The caller reads one clock, but concurrent callers can reach
// a rate limiter with slightly out-of-order times: a rate limiter must then
// stay on the strict side (for example count a late caller in the current
// window), never grant more because of it. A Cancel always carries the
// instant of its grant, which may be well before the limiter's latest call.
type Limiter interface {
	// TryAcquire takes n units now if the configuration allows it. It
	// never blocks. A refusal consumes nothing and carries a hint.
	TryAcquire(now time.Time, n int64) Decision

	// Release tells the limiter that the holder of n granted units has
	// finished. Concurrency limiters return the units; for rate limiters
	// it is a no-op (taken quota stays taken), and the kernel does not
	// call it on them.
	Release(now time.Time, n int64)

	// Cancel gives back n units that were granted but never used, as if
	// TryAcquire had refused them. now is always the instant of the grant
	// (the now its TryAcquire was given), so that a rate limiter can tell
	// which window or period counted the units. Callers use it to undo an
	// all-or-nothing acquisition across several limiters, at once, and
	// for a request that was granted but refused by a later step before
	// it ran: then the Cancel arrives late, after calls at later instants,
	// still with the grant's now. A rate limiter gives back only what the
	// grant's absence would have left it holding from then on, and
	// never more: nothing once the window or period that counted the units
	// has passed, nothing once the limiter has been full (at its capacity)
	// since the grant, nothing above its capacity; when it cannot tell,
	// it gives back less or nothing (too strict, never loose). A
	// concurrency limiter behaves as Release.
	Cancel(now time.Time, n int64)

	// Reconfigure changes the limiter's parameters in place, keeping its
	// state. It must never create capacity that neither the old nor the
	// new parameters allow at now (no free burst: a raised capacity does
	// not refill, a window is not reset), and it never revokes units that
	// are held: a limit lowered below the held count admits nobody until
	// the holders fall below it. Params were validated by the kind's
	// Validate; Reconfigure returns an error only for a change it cannot
	// express, and then changes nothing.
	Reconfigure(now time.Time, p Params) error

	// Snapshot reports the limiter's state at now. The figures are
	// consistent with each other (taken at one instant).
	Snapshot(now time.Time) Snapshot
}

// Snapshot is a limiter's state at one instant.
type Snapshot struct {
	// Kind is the registered kind name.
	Kind string
	// Limit is the current bound: the concurrency limit, or the number of
	// units the rate limiter can grant at most at once (bucket capacity,
	// window permit limit).
	Limit int64
	// InUse is the held units (concurrency) or the consumed quota that is
	// still counted (rate). The kernel relies on both readings: a
	// concurrency kind's InUse is what a kind replacement counts as
	// occupied by the old holders, so it must be exact; a rate limiter
	// whose InUse is 0 (or less) must behave from now on exactly as a
	// fresh limiter with its parameters would, because the kernel then
	// drops it when nothing else needs it (it keeps a rate state with
	// consumed quota, so that Disable and Enable or an idle partition's
	// reclaim is no free burst).
	InUse int64
	// Available is how many units TryAcquire(now, n) could grant now.
	Available int64
}
