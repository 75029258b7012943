package windowtest_test

import (
	"fmt"
	"time"

	"github.com/sluicerpc/sluice/conformance"
	"github.com/sluicerpc/sluice/limiters/window"
	"github.com/sluicerpc/sluice/limiters/window/windowtest"
)

// Each window kind has its description; in a test:
//
//	conformance.RunLimiterTests(t, func(*testing.T) (conformance.LimiterHarness, error) {
//		return conformance.HarnessOf(window.SlidingKind{}, windowtest.SlidingCapabilities()), nil
//	})
func ExampleSlidingCapabilities() {
	h := conformance.HarnessOf(window.SlidingKind{}, windowtest.SlidingCapabilities())
	defer h.Close()
	caps := h.Capabilities()
	fmt.Println(h.Kind().Name(), caps.RaiseFreesUnits, caps.Validate())
	fmt.Println(h.Kind().Validate(caps.Params(5)), h.Kind().Validate(caps.AltParams(5)))
	// Output:
	// slidingwindow true <nil>
	// <nil> <nil>
}

// The allowances bound the units a window frees between two instants: a
// fixed window of 100ms may open twice in 150ms; a sliding window of 100ms
// in 4 segments counts each grant for at least 75ms.
func ExampleFixedAllowance() {
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	later := start.Add(150 * time.Millisecond)
	fmt.Println(windowtest.FixedAllowance(window.FixedSpec(5, 100*time.Millisecond).Params, start, later))
	fmt.Println(windowtest.SlidingAllowance(window.SlidingSpec(5, 100*time.Millisecond, 4).Params, start, later))
	// Output:
	// 10
	// 10
}
