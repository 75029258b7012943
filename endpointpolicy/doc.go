// Package endpointpolicy provides sluice's built-in client endpoint
// admission policies, each an spi.EndpointPolicy keyed by the endpoint
// string:
//
//   - CircuitBreaker: closed / open / half-open per endpoint over a sliding
//     window of time buckets, updatable live without losing its state
//     (sony/gobreaker and Polly semantics);
//   - AdaptiveThrottle: Google SRE client-side adaptive throttling, which
//     rejects locally with probability
//     max(0, (requests - K*accepts) / (requests + 1));
//   - EndpointConcurrency: at most Limit attempts in flight per endpoint,
//     resizable live.
//
// # Shared contracts
//
// Every policy is safe for concurrent use. Per-endpoint state lives behind
// a copy-on-write endpoint table (lock-free lookup) and a short
// per-endpoint mutex; no lock is held while a policy calls out (to its
// Clock, to a user classifier or to a random source).
//
// Every time-dependent behaviour reads the policy's injected spi.Clock
// (nil means spi.SystemClock), so tests can drive the policies with a fake
// clock.
//
// Tokens are the policies' own: a token names the endpoint state, a slot
// in that endpoint's bounded table of outstanding attempts and a sequence
// number, and the slot remembers the exact token it issued. Report redeems
// the slot once: a zero, unknown, foreign or repeated token matches no
// outstanding slot and is ignored. Report never panics, not even when a
// user-supplied Clock or classifier does (the outcome is then not sampled,
// but the attempt's slot is still released). A repeated token could only be
// mistaken for a live one if the same slot had been reissued exactly 2^20
// attempts later on the same endpoint.
//
// Endpoint state is kept for the life of a policy (up to 2^24-1 distinct
// endpoints; beyond that a policy stops tracking new endpoints: the breaker
// and the throttle then allow them untracked, with token 0, and the
// concurrency limit refuses them). A client is expected to talk to a
// bounded set of endpoints; build a fresh policy to forget them.
package endpointpolicy
