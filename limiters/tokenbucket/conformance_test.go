package tokenbucket_test

import (
	"testing"
	"time"

	"github.com/sluicerpc/sluice/conformance"
	"github.com/sluicerpc/sluice/limiters/tokenbucket"
	"github.com/sluicerpc/sluice/spi"
)

// harness describes the tokenbucket kind to the conformance suite: a
// discrete bucket (2 tokens every 100ms), and a continuous one (3 tokens per
// 300ms) as the alternative cadence.
type harness struct{}

func (harness) Kind() spi.LimiterKind { return tokenbucket.Kind{} }

func (harness) Capabilities() conformance.LimiterCapabilities {
	return conformance.LimiterCapabilities{
		Class:            spi.ClassRate,
		Params:           func(limit int64) spi.Params { return tokenbucket.Spec(limit, 2, 100*time.Millisecond).Params },
		AltParams:        func(limit int64) spi.Params { return tokenbucket.ContinuousSpec(limit, 3, 300*time.Millisecond).Params },
		ReconfigureLimit: true,
		Tick:             100 * time.Millisecond,
		Allowance:        allowance,
	}
}

func (harness) Close() {}

// allowance is the most tokens a bucket with p can add during (from, to]:
// a discrete bucket adds tokensPerPeriod at each period boundary, and at
// most ceil(d/period) boundaries fall in an interval of length d whatever
// the phase; a continuous bucket adds d×tokensPerPeriod/period, of which a
// carried fraction can round up one whole token.
func allowance(p spi.Params, from, to time.Time) int64 {
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

func TestConformance(t *testing.T) {
	conformance.RunLimiterTests(t, func(*testing.T) (conformance.LimiterHarness, error) { return harness{}, nil })
}
