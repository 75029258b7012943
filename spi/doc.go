// Package spi holds the contracts that sluice's plug-in implementations
// satisfy: limiters, codecs ([Codec]: compression profiles with bounded
// output) and client endpoint policies. It imports only the standard library, so a third party can
// implement a limiter kind by depending on spi alone (and on the conformance
// module in its tests).
//
// # Limiters
//
// A [Limiter] answers [Limiter.TryAcquire] now: it never waits and owns no
// queue. Waiting belongs to the caller (sluice's kernel), which uses the
// [Decision]'s hint to know when a retry could succeed. Every time-dependent
// operation takes the current time explicitly, so implementations are
// deterministic under test.
//
// A limiter kind is registered by name in a [Registry] (usually
// [DefaultRegistry], from an init function, like database/sql drivers), and
// the kernel builds limiters from a [Spec] (kind name plus [Params]) without
// importing the implementation.
package spi
