package window_test

import (
	"testing"
	"time"

	"github.com/sluicerpc/sluice/conformance"
	"github.com/sluicerpc/sluice/limiters/window"
	"github.com/sluicerpc/sluice/spi"
)

// fixedHarness describes the fixedwindow kind: 100ms windows, 300ms as the
// alternative cadence.
type fixedHarness struct{}

func (fixedHarness) Kind() spi.LimiterKind { return window.FixedKind{} }

func (fixedHarness) Capabilities() conformance.LimiterCapabilities {
	return conformance.LimiterCapabilities{
		Class:            spi.ClassRate,
		Params:           func(limit int64) spi.Params { return window.FixedSpec(limit, 100*time.Millisecond).Params },
		AltParams:        func(limit int64) spi.Params { return window.FixedSpec(limit, 300*time.Millisecond).Params },
		ReconfigureLimit: true,
		RaiseFreesUnits:  true,
		Tick:             100 * time.Millisecond,
		Allowance: func(p spi.Params, from, to time.Time) int64 {
			// A window opens at most ceil(d/window) times in (from,
			// to] and each opening frees at most the permit limit.
			return p[window.ParamPermitLimit] * ceilDiv(to.Sub(from), time.Duration(p[window.ParamWindow]))
		},
	}
}

func (fixedHarness) Close() {}

// slidingHarness describes the slidingwindow kind: 100ms in 4 segments,
// 300ms in 3 segments as the alternative cadence.
type slidingHarness struct{}

func (slidingHarness) Kind() spi.LimiterKind { return window.SlidingKind{} }

func (slidingHarness) Capabilities() conformance.LimiterCapabilities {
	return conformance.LimiterCapabilities{
		Class:            spi.ClassRate,
		Params:           func(limit int64) spi.Params { return window.SlidingSpec(limit, 100*time.Millisecond, 4).Params },
		AltParams:        func(limit int64) spi.Params { return window.SlidingSpec(limit, 300*time.Millisecond, 3).Params },
		ReconfigureLimit: true,
		RaiseFreesUnits:  true,
		Tick:             100 * time.Millisecond,
		Allowance: func(p spi.Params, from, to time.Time) int64 {
			// Every grant counts for at least window-segment (the
			// span of the segments before the current one), so any
			// closed interval of that length admits at most the
			// permit limit, and units freed during (from, to] are at
			// most that per chunk.
			w := time.Duration(p[window.ParamWindow])
			return p[window.ParamPermitLimit] * ceilDiv(to.Sub(from), w-w/time.Duration(p[window.ParamSegments]))
		},
	}
}

func (slidingHarness) Close() {}

func ceilDiv(d, step time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + step - 1) / step)
}

func TestConformanceFixed(t *testing.T) {
	conformance.RunLimiterTests(t, func(*testing.T) (conformance.LimiterHarness, error) { return fixedHarness{}, nil })
}

func TestConformanceSliding(t *testing.T) {
	conformance.RunLimiterTests(t, func(*testing.T) (conformance.LimiterHarness, error) { return slidingHarness{}, nil })
}
