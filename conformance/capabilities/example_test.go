package capabilities_test

import (
	"fmt"
	"time"

	"github.com/sluicerpc/sluice/conformance/capabilities"
	"github.com/sluicerpc/sluice/spi"
)

// A rate kind's description: how to parameterize it for a limit, its
// cadence, and a bound on what it can free over time. A plugin binary
// declares it without linking the suite.
func ExampleLimiter() {
	const period = 100 * time.Millisecond // "example.com/perperiod": limit units per period
	caps := capabilities.Limiter{
		Class:            spi.ClassRate,
		Params:           func(limit int64) spi.Params { return spi.Params{"limit": limit, "period": int64(period)} },
		ReconfigureLimit: true,
		Tick:             period,
		Allowance: func(p spi.Params, from, to time.Time) int64 {
			periods := (to.Sub(from) + period - 1) / period // boundaries met in (from, to]
			return p["limit"] * int64(periods)
		},
	}
	fmt.Println(caps.Validate())

	incomplete := caps
	incomplete.Allowance = nil // a rate kind the suite cannot bound
	fmt.Println(incomplete.Validate())
	// Output:
	// <nil>
	// capabilities: a rate kind must set Allowance and a positive Tick
}

// A policy that bounds attempts per endpoint says so; the zero value asks
// only for the checks every policy passes.
func ExampleEndpointPolicy() {
	fmt.Println(capabilities.EndpointPolicy{}.Validate())
	fmt.Println(capabilities.EndpointPolicy{Deterministic: true, Bounded: 8}.Validate())
	fmt.Println(capabilities.EndpointPolicy{Bounded: capabilities.MaxBounded + 1}.Validate())
	// Output:
	// <nil>
	// <nil>
	// capabilities: Bounded 4097 is above 4096
}
