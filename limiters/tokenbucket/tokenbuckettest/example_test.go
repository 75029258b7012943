package tokenbuckettest_test

import (
	"fmt"
	"time"

	"github.com/sluicerpc/sluice/conformance"
	"github.com/sluicerpc/sluice/limiters/tokenbucket"
	"github.com/sluicerpc/sluice/limiters/tokenbucket/tokenbuckettest"
	"github.com/sluicerpc/sluice/spi"
)

// Capabilities is what a conformance harness pairs with the kind; in a test:
//
//	conformance.RunLimiterTests(t, func(*testing.T) (conformance.LimiterHarness, error) {
//		return conformance.HarnessOf(tokenbucket.Kind{}, tokenbuckettest.Capabilities()), nil
//	})
func ExampleCapabilities() {
	h := conformance.HarnessOf(tokenbucket.Kind{}, tokenbuckettest.Capabilities())
	defer h.Close()
	caps := h.Capabilities()
	fmt.Println(h.Kind().Name(), caps.Tick, caps.Validate())
	for _, p := range []spi.Params{caps.Params(5), caps.AltParams(5)} {
		fmt.Println(h.Kind().Validate(p))
	}
	// Output:
	// tokenbucket 100ms <nil>
	// <nil>
	// <nil>
}

// Allowance bounds what a bucket can refill between two instants: a
// discrete bucket of 2 tokens per 100ms may meet two period boundaries in
// 150ms, a continuous one of 3 per 300ms refills 1.5, rounded up.
func ExampleAllowance() {
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	later := start.Add(150 * time.Millisecond)
	fmt.Println(tokenbuckettest.Allowance(tokenbucket.Spec(10, 2, 100*time.Millisecond).Params, start, later))
	fmt.Println(tokenbuckettest.Allowance(tokenbucket.ContinuousSpec(10, 3, 300*time.Millisecond).Params, start, later))
	fmt.Println(tokenbuckettest.Allowance(tokenbucket.Spec(10, 2, 100*time.Millisecond).Params, later, later))
	// Output:
	// 4
	// 2
	// 0
}
