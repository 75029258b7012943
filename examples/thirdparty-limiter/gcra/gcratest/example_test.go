package gcratest_test

import (
	"fmt"
	"time"

	"github.com/sluicerpc/sluice/conformance"
	"github.com/sluicerpc/sluice/examples/thirdparty-limiter/gcra"
	"github.com/sluicerpc/sluice/examples/thirdparty-limiter/gcra/gcratest"
)

// A third-party kind ships its description next to it, for its own
// conformance test and for a plugin binary (plugin.WithCapabilities):
//
//	conformance.RunLimiterTests(t, func(*testing.T) (conformance.LimiterHarness, error) {
//		return conformance.HarnessOf(gcra.Kind{}, gcratest.Capabilities()), nil
//	})
func ExampleCapabilities() {
	h := conformance.HarnessOf(gcra.Kind{}, gcratest.Capabilities())
	defer h.Close()
	caps := h.Capabilities()
	fmt.Println(h.Kind().Name(), caps.Tick, caps.Validate(), h.Kind().Validate(caps.Params(4)))

	// One unit is freed per interval: at most 3 in 25ms of 10ms intervals.
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	fmt.Println(gcratest.Allowance(caps.Params(4), start, start.Add(25*time.Millisecond)))
	// Output:
	// example.com/gcra 10ms <nil> <nil>
	// 3
}
