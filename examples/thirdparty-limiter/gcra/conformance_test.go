package gcra_test

import (
	"testing"
	"time"

	"github.com/sluicerpc/sluice/conformance"
	"github.com/sluicerpc/sluice/examples/thirdparty-limiter/gcra"
	"github.com/sluicerpc/sluice/spi"
)

// tick is the interval the conformance harness uses: one unit is paid back
// every 10ms.
const tick = 10 * time.Millisecond

// harness describes a GCRA kind (in process, or loaded from the plugin
// binary) to the conformance suite.
type harness struct {
	kind  spi.LimiterKind
	close func()
}

func (h harness) Kind() spi.LimiterKind { return h.kind }

func (harness) Capabilities() conformance.LimiterCapabilities {
	return conformance.LimiterCapabilities{
		Class:            spi.ClassRate,
		Params:           func(limit int64) spi.Params { return gcra.Params(limit, tick) },
		ReconfigureLimit: true,
		Tick:             tick,
		RaiseFreesUnits:  false,
		Allowance:        allowance,
	}
}

func (h harness) Close() {
	if h.close != nil {
		h.close()
	}
}

// allowance is the most units a GCRA limiter with p can make available
// during (from, to]. The available count at t is burst - ceil((TAT-t)/I):
// it rises by one each time t crosses TAT - k*I, and an interval of length
// d holds at most ceil(d/I) such instants whatever the phase. Grants only
// move the TAT later, and Reconfigure restarts the debt on the grid of now,
// so this bound holds from every publication.
func allowance(p spi.Params, from, to time.Time) int64 {
	iv, ok := p.Duration(gcra.ParamInterval)
	if !ok || iv <= 0 || !to.After(from) {
		return 0
	}
	d, i := int64(to.Sub(from)), int64(iv)
	return (d + i - 1) / i
}

func TestConformance(t *testing.T) {
	conformance.RunLimiterTests(t, func(*testing.T) (conformance.LimiterHarness, error) {
		return harness{kind: gcra.Kind{}}, nil
	})
}
