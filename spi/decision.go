package spi

import "time"

// Hint tells a caller whose TryAcquire was refused when a retry could
// succeed.
type Hint uint8

const (
	// HintNone accompanies a grant.
	HintNone Hint = iota
	// HintOnRelease: a retry can succeed only after a holder releases
	// (concurrency limiters), or after a Reconfigure raises the limit.
	HintOnRelease
	// HintAt: a retry can succeed no earlier than Decision.RetryAt (rate
	// limiters). The hint must never be earlier than the first instant at
	// which a retry can succeed; it may be later only by rounding.
	HintAt
	// HintNever: the request can never be granted under the current
	// configuration (for example n is above the limit itself). Only a
	// Reconfigure can change that.
	HintNever
)

// String returns the hint's name.
func (h Hint) String() string {
	switch h {
	case HintNone:
		return "none"
	case HintOnRelease:
		return "on-release"
	case HintAt:
		return "at"
	case HintNever:
		return "never"
	}
	return "hint(?)"
}

// Decision is a limiter's answer to TryAcquire. It is a value: returning it
// allocates nothing.
type Decision struct {
	// Granted reports whether the units were taken.
	Granted bool
	// Hint says when a refused request could be retried.
	Hint Hint
	// RetryAt is meaningful only with HintAt.
	RetryAt time.Time
}

// Grant is the Decision of a successful TryAcquire.
func Grant() Decision { return Decision{Granted: true} }

// RefuseUntilRelease is the Decision of a concurrency limiter at its limit.
func RefuseUntilRelease() Decision { return Decision{Hint: HintOnRelease} }

// RefuseUntil is the Decision of a rate limiter whose next unit is available
// at t.
func RefuseUntil(t time.Time) Decision { return Decision{Hint: HintAt, RetryAt: t} }

// RefuseNever is the Decision for a request that cannot be granted under the
// current configuration.
func RefuseNever() Decision { return Decision{Hint: HintNever} }
