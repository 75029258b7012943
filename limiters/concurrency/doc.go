// Package concurrency provides sluice's live-resizable concurrency limiter,
// registered in spi.DefaultRegistry as kind "concurrency" with one parameter,
// "limit" (1 to MaxLimit).
//
// The limit and the held count live in one 64-bit word changed by
// compare-and-swap, so every grant is checked against the limit in force at
// the instant it is taken: a resize racing with TryAcquire can never let a
// grant through against a limit that was already replaced. Growing the limit
// exposes exactly the new capacity; shrinking it keeps every holder and
// admits nobody until the held count is below the new limit.
package concurrency
