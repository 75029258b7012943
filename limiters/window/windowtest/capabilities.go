// Package windowtest describes the fixed and sliding window limiter kinds
// to the conformance suite. It is a package of its own so that the kinds'
// runtime package does not import the conformance module, while its tests,
// the built-in plugin binary and "sluice conformance" share one
// description.
package windowtest

import (
	"time"

	"github.com/sluicerpc/sluice/conformance/capabilities"
	"github.com/sluicerpc/sluice/limiters/window"
	"github.com/sluicerpc/sluice/spi"
)

// FixedCapabilities describes window.FixedKind: 100ms windows, 300ms as
// the alternative cadence.
func FixedCapabilities() capabilities.Limiter {
	return capabilities.Limiter{
		Class:            spi.ClassRate,
		Params:           func(limit int64) spi.Params { return window.FixedSpec(limit, 100*time.Millisecond).Params },
		AltParams:        func(limit int64) spi.Params { return window.FixedSpec(limit, 300*time.Millisecond).Params },
		ReconfigureLimit: true,
		RaiseFreesUnits:  true,
		Tick:             100 * time.Millisecond,
		Allowance:        FixedAllowance,
	}
}

// FixedAllowance bounds the units a fixed window with p frees during
// (from, to]: a window opens at most ceil(d/window) times in an interval
// of length d, and each opening frees at most the permit limit.
func FixedAllowance(p spi.Params, from, to time.Time) int64 {
	return p[window.ParamPermitLimit] * ceilDiv(to.Sub(from), time.Duration(p[window.ParamWindow]))
}

// SlidingCapabilities describes window.SlidingKind: 100ms in 4 segments,
// 300ms in 3 segments as the alternative cadence.
func SlidingCapabilities() capabilities.Limiter {
	return capabilities.Limiter{
		Class:            spi.ClassRate,
		Params:           func(limit int64) spi.Params { return window.SlidingSpec(limit, 100*time.Millisecond, 4).Params },
		AltParams:        func(limit int64) spi.Params { return window.SlidingSpec(limit, 300*time.Millisecond, 3).Params },
		ReconfigureLimit: true,
		RaiseFreesUnits:  true,
		Tick:             100 * time.Millisecond,
		Allowance:        SlidingAllowance,
	}
}

// SlidingAllowance bounds the units a sliding window with p frees during
// (from, to]: every grant counts for at least window-segment (the span of
// the segments before the current one), so any closed interval of that
// length admits at most the permit limit, and units freed during (from,
// to] are at most that per chunk.
func SlidingAllowance(p spi.Params, from, to time.Time) int64 {
	w := time.Duration(p[window.ParamWindow])
	return p[window.ParamPermitLimit] * ceilDiv(to.Sub(from), w-w/time.Duration(p[window.ParamSegments]))
}

func ceilDiv(d, step time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + step - 1) / step)
}
