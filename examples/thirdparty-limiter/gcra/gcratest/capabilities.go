// Package gcratest describes the GCRA kind to the sluice conformance
// suite. The kind's own tests use it, and cmd/gcra-plugin serves it with
// the kind, so that "sluice conformance --plugin gcra-plugin" can test the
// binary. It imports the conformance module's capabilities package only,
// which depends on nothing but the standard library and spi: the plugin
// binary links neither the suite nor testify.
package gcratest

import (
	"time"

	"github.com/sluicerpc/sluice/conformance/capabilities"
	"github.com/sluicerpc/sluice/examples/thirdparty-limiter/gcra"
	"github.com/sluicerpc/sluice/spi"
)

// Tick is the interval the capabilities use: one unit is paid back every
// 10ms.
const Tick = 10 * time.Millisecond

// Capabilities describes gcra.Kind: burst = limit, interval = Tick.
func Capabilities() capabilities.Limiter {
	return capabilities.Limiter{
		Class:            spi.ClassRate,
		Params:           func(limit int64) spi.Params { return gcra.Params(limit, Tick) },
		ReconfigureLimit: true,
		Tick:             Tick,
		RaiseFreesUnits:  false,
		Allowance:        Allowance,
	}
}

// Allowance is the most units a GCRA limiter with p can make available
// during (from, to]. The available count at t is burst - ceil((TAT-t)/I):
// it rises by one each time t crosses TAT - k*I, and an interval of length
// d holds at most ceil(d/I) such instants whatever the phase. Grants only
// move the TAT later, and Reconfigure restarts the debt on the grid of now,
// so this bound holds from every publication.
func Allowance(p spi.Params, from, to time.Time) int64 {
	iv, ok := p.Duration(gcra.ParamInterval)
	if !ok || iv <= 0 || !to.After(from) {
		return 0
	}
	d, i := int64(to.Sub(from)), int64(iv)
	return (d + i - 1) / i
}
