// Package conformance is the test suite that any sluice SPI implementation
// runs to prove it keeps the contracts.
//
// It follows the Go CDK drivertest shape: an implementer writes a small
// harness and calls the suite from an ordinary test,
//
//	func TestConformance(t *testing.T) {
//		conformance.RunLimiterTests(t, newHarness)
//	}
//
// and the suite runs one subtest per check. RunEndpointPolicyTests does the
// same for spi.EndpointPolicy, with a harness whose policies read a fake
// clock the suite advances. RunCodecTests (and CheckCodec outside go test)
// vets an spi.Codec: round trips over many sizes and shapes, exact limits,
// a 1 GiB bomb refused within a measured allocation bound, truncated,
// trailing and corrupt input refused without a panic, cancellation within
// about one spi.DecodeQuantum, and concurrent use; its harness supplies the
// codec and bombs in the codec's format. Every limiter check uses explicit time
// only: it builds limiters at a fixed start instant and advances the time it
// passes to them itself, so runs are deterministic, apart from the
// interleavings of the three racing checks. Those are sound (they never
// fail a linearizable limiter, whatever the scheduling) and catch
// check-then-act races, lost updates and Snapshots read at two instants
// without -race: see race.go and snapshot_race.go.
package conformance
