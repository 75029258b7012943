// Package tokenbuckettest describes the token bucket limiter kind to the
// conformance suite. It is a package of its own so that the kind's runtime
// package does not import the conformance module, while its tests, the
// built-in plugin binary and "sluice conformance" share one description.
package tokenbuckettest

import (
	"time"

	"github.com/sluicerpc/sluice/conformance/capabilities"
	"github.com/sluicerpc/sluice/limiters/tokenbucket"
	"github.com/sluicerpc/sluice/spi"
)

// Capabilities describes tokenbucket.Kind: a discrete bucket (2 tokens
// every 100ms), and a continuous one (3 tokens per 300ms) as the
// alternative cadence.
func Capabilities() capabilities.Limiter {
	return capabilities.Limiter{
		Class:            spi.ClassRate,
		Params:           func(limit int64) spi.Params { return tokenbucket.Spec(limit, 2, 100*time.Millisecond).Params },
		AltParams:        func(limit int64) spi.Params { return tokenbucket.ContinuousSpec(limit, 3, 300*time.Millisecond).Params },
		ReconfigureLimit: true,
		Tick:             100 * time.Millisecond,
		Allowance:        Allowance,
	}
}

// Allowance is the most tokens a bucket with p can add during (from, to]:
// a discrete bucket adds tokensPerPeriod at each period boundary, and at
// most ceil(d/period) boundaries fall in an interval of length d whatever
// the phase; a continuous bucket adds d×tokensPerPeriod/period, of which a
// carried fraction can round up one whole token.
func Allowance(p spi.Params, from, to time.Time) int64 {
	o, err := tokenbucket.ParseParams(p)
	if err != nil || !to.After(from) {
		return 0
	}
	d, period := int64(to.Sub(from)), int64(o.Period)
	if o.Continuous {
		return (d*o.TokensPerPeriod + period - 1) / period
	}
	return o.TokensPerPeriod * ((d + period - 1) / period)
}
