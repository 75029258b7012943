// Package tokenbucket provides sluice's token bucket rate limiter, registered
// in spi.DefaultRegistry as kind "tokenbucket" (class spi.ClassRate) with
// parameters "tokenLimit", "tokensPerPeriod", "period" (ns), and the optional
// flags "continuous" and "unlimited" (see Options).
//
// # Refill
//
// A discrete bucket (the default, the .NET TokenBucketRateLimiter semantic)
// gains tokensPerPeriod tokens at every period boundary, boundaries aligned
// to its origin (its creation, or the publication of a cadence change). A
// continuous bucket (the golang.org/x/time/rate semantic) gains
// tokensPerPeriod/period tokens per unit of time. Both are capped at
// tokenLimit and start full. All arithmetic is exact integer arithmetic: a
// continuous bucket counts in 1/P of a token, where tokensPerPeriod/period
// = Q/P in lowest terms, so a refused TryAcquire's retry time is the exact
// earliest nanosecond at which the same request succeeds.
//
// # Live changes without a free burst
//
// Reconfigure (or Update) first advances the bucket to the publication
// instant under the old parameters, then carries its tokens over, capped at
// the new capacity: raising tokenLimit never refills. A change of period,
// tokensPerPeriod or mode restarts the period at the publication, so no
// extra replenishment is granted there. Unlimited mode grants everything but
// keeps counting, so a later change back to limited starts from what the
// traffic left, not from a full bucket. Invalid parameters change nothing.
//
// For an algorithm replacement, Seal hands the bucket's debt and inherited
// barriers over as []spi.Usage, and Inherit takes such usage over: it is
// consumed at once and, until each entry's Until, refill cannot raise the
// bucket above tokenLimit less the units still held by barriers.
//
// Cancel gives back quota granted at the same instant, capped at what the
// bucket can hold; it is a no-op in unlimited mode and after Seal, and at
// the instant of a publication it cannot lift the bucket above what the
// publication carried (the grant may have been counted by the predecessor).
//
// # Limits
//
// Continuous mode needs tokenLimit × period/gcd(period, tokensPerPeriod)
// <= MaxContinuousScale, so that the bucket fits the 64-bit fixed point
// with room for debt. A debt deeper than the fixed point holds (2^61 units
// of 1/P token; astronomically deep in discrete mode) is folded into a
// synthetic barrier that is stricter than the exact bucket, never looser. A
// refusal whose exact retry time lies more than about 292 years after the
// config's origin is reported as spi.RefuseNever().
//
// # Concurrency
//
// TryAcquire, Cancel and Snapshot take no lock and allocate nothing. Each
// publication is an immutable config (parameters, origin, barriers) held in
// an atomic pointer, and the bucket's state is one 64-bit word inside it,
// changed by compare-and-swap (a generic cell rate algorithm form: the
// word's value plus the elapsed refill gives the tokens, so refill needs no
// write). The control path freezes the old config's word before computing
// its successor, so every grant is counted on exactly one config.
//
// Concurrent callers can arrive with slightly out-of-order times (each read
// the clock a moment before its compare-and-swap). The word does not record
// the time of the newest grant, so a caller whose time is older than the
// newest grant's sees the refill between the two as not yet accrued: it is
// judged on the strict side, never granted more. With a realistic refill
// horizon (tokenLimit at the refill rate, typically tens of milliseconds to
// seconds) the effect is nil; with a horizon of a millisecond or less, a
// caller descheduled for longer than the horizon between reading the clock
// and acquiring can be refused although the bucket has tokens.
package tokenbucket
