package window

import (
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/sluicerpc/sluice/spi"
)

// Parameter names. Durations are in nanoseconds, as everywhere in spi.Params.
const (
	// ParamPermitLimit is the number of units a window admits, in
	// [1, MaxPermitLimit].
	ParamPermitLimit = "permitLimit"
	// ParamWindow is the window length in nanoseconds, at least MinWindow.
	ParamWindow = "window"
	// ParamSegments is the number of segments a sliding window is divided
	// into, in [2, MaxSegments]; it must divide the window exactly.
	ParamSegments = "segments"
)

// Bounds of the parameters.
const (
	// MaxPermitLimit is the largest permit limit: a window's count is
	// stored in 31 bits (sliding) or 32 bits (fixed).
	MaxPermitLimit = 1<<31 - 1
	// MinWindow is the shortest window.
	MinWindow = time.Microsecond
	// MaxSegments is the largest number of segments of a sliding window.
	// A sliding window keeps one word per segment (rounded up to a power
	// of two), and a refusal walks every segment to compute its hint, so
	// the number is bounded.
	MaxSegments = 1 << 12
)

var (
	fixedParamNames   = []string{ParamPermitLimit, ParamWindow}
	slidingParamNames = []string{ParamPermitLimit, ParamSegments, ParamWindow}
)

// fixedParams validates p for kind fixedwindow.
func fixedParams(p spi.Params) (limit int64, window time.Duration, err error) {
	if err := checkParams(FixedKindName, p, fixedParamNames); err != nil {
		return 0, 0, err
	}
	return p[ParamPermitLimit], time.Duration(p[ParamWindow]), nil
}

// slidingParams validates p for kind slidingwindow.
func slidingParams(p spi.Params) (limit int64, window time.Duration, segments int64, err error) {
	if err := checkParams(SlidingKindName, p, slidingParamNames); err != nil {
		return 0, 0, 0, err
	}
	window, segments = time.Duration(p[ParamWindow]), p[ParamSegments]
	if int64(window)%segments != 0 {
		return 0, 0, 0, spi.InvalidParam(ParamSegments, "must divide window (%dns) exactly, got %d", int64(window), segments)
	}
	return p[ParamPermitLimit], window, segments, nil
}

// checkParams checks every name that p sets or that want requires, in
// sorted order, and reports the first problem, so that the error is the
// same whatever the map's iteration order.
func checkParams(kind string, p spi.Params, want []string) error {
	names := slices.Sorted(maps.Keys(p))
	for _, n := range want {
		if _, ok := p[n]; !ok {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		v, ok := p[name]
		if !slices.Contains(want, name) {
			return spi.InvalidParam(name, "unknown parameter for kind %q (want %s)", kind, strings.Join(want, ", "))
		}
		if !ok {
			return spi.InvalidParam(name, "required")
		}
		if err := checkValue(name, v); err != nil {
			return err
		}
	}
	return nil
}

func checkValue(name string, v int64) error {
	switch name {
	case ParamPermitLimit:
		if v < 1 || v > MaxPermitLimit {
			return spi.InvalidParam(name, "must be between 1 and %d, got %d", MaxPermitLimit, v)
		}
	case ParamWindow:
		if v < int64(MinWindow) {
			return spi.InvalidParam(name, "must be at least %dns (%v), got %d", int64(MinWindow), MinWindow, v)
		}
	case ParamSegments:
		if v < 2 || v > MaxSegments {
			return spi.InvalidParam(name, "must be between 2 and %d, got %d", MaxSegments, v)
		}
	}
	return nil
}
