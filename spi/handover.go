package spi

import "time"

// Usage is quota a rate limiter granted that still counts against its
// limit: Units stop counting at Until.
type Usage struct {
	Units int64
	Until time.Time
}

// Handover is implemented by rate limiters whose consumed quota can be
// passed to a successor of another kind, when a configuration replaces the
// algorithm at a scope (token bucket -> sliding window, ...). Every built-in
// rate limiter implements it; the kernel rejects an algorithm replacement
// whose old limiter does not.
type Handover interface {
	// Seal freezes the limiter at now and returns, exactly, the usage
	// that still counts at now: its own consumed quota (with the time
	// each part would stop counting under its own algorithm) and any
	// usage it inherited that has not expired. After Seal, TryAcquire
	// refuses every request with HintNever (the caller then goes to the
	// successor), Cancel of an earlier grant is ignored (the unit was
	// handed over), and Snapshot keeps working. Seal is called once.
	Seal(now time.Time) []Usage
}

// Inheritor is implemented by rate limiters that can take over a
// predecessor's usage. Every built-in rate limiter implements it; the
// kernel rejects an algorithm replacement whose new limiter does not.
type Inheritor interface {
	// Inherit makes each entry of usage count against this limiter as if
	// its Units had been consumed at now under this limiter's own
	// algorithm, and in addition not released before the entry's Until:
	// a barrier that lasts until the later of its natural expiry and this
	// limiter's horizon. It is called once, at now, before the limiter
	// grants anything to anyone but the caller.
	Inherit(now time.Time, usage []Usage)
}
