package concurrencytest_test

import (
	"fmt"
	"time"

	"github.com/sluicerpc/sluice/conformance"
	"github.com/sluicerpc/sluice/limiters/concurrency"
	"github.com/sluicerpc/sluice/limiters/concurrency/concurrencytest"
)

// Capabilities is what a conformance harness pairs with the kind; in a test:
//
//	conformance.RunLimiterTests(t, func(*testing.T) (conformance.LimiterHarness, error) {
//		return conformance.HarnessOf(concurrency.Kind{}, concurrencytest.Capabilities()), nil
//	})
//
// The suite builds its limiters from Params, which the kind accepts.
func ExampleCapabilities() {
	h := conformance.HarnessOf(concurrency.Kind{}, concurrencytest.Capabilities())
	defer h.Close()
	caps := h.Capabilities()
	fmt.Println(h.Kind().Name(), caps.Class == h.Kind().Class(), caps.Validate())

	p := caps.Params(3)
	l, err := h.Kind().New(p, time.Time{})
	if err != nil {
		panic(err)
	}
	fmt.Println(p, l.Snapshot(time.Time{}).Limit)
	// Output:
	// concurrency true <nil>
	// {limit=3} 3
}
