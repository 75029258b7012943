package window

import (
	"time"

	"github.com/sluicerpc/sluice/spi"
)

// Registry names of the two kinds.
const (
	FixedKindName   = "fixedwindow"
	SlidingKindName = "slidingwindow"
)

// FixedKind is the spi.LimiterKind for fixed windows. It is registered in
// spi.DefaultRegistry when this package is imported.
type FixedKind struct{}

// SlidingKind is the spi.LimiterKind for sliding windows. It is registered
// in spi.DefaultRegistry when this package is imported.
type SlidingKind struct{}

func init() {
	spi.DefaultRegistry.MustRegister(FixedKind{})
	spi.DefaultRegistry.MustRegister(SlidingKind{})
}

// Name returns "fixedwindow".
func (FixedKind) Name() string { return FixedKindName }

// Class returns spi.ClassRate.
func (FixedKind) Class() spi.Class { return spi.ClassRate }

// Validate accepts exactly "permitLimit" (1 to MaxPermitLimit) and "window"
// (at least MinWindow, in nanoseconds). When several parameters are wrong,
// the error names the first in sorted order.
func (FixedKind) Validate(p spi.Params) error {
	_, _, err := fixedParams(p)
	return err
}

// New builds an empty fixed window whose windows are aligned to now.
func (FixedKind) New(p spi.Params, now time.Time) (spi.Limiter, error) {
	limit, window, err := fixedParams(p)
	if err != nil {
		return nil, err
	}
	return newFixed(limit, window, now), nil
}

// Name returns "slidingwindow".
func (SlidingKind) Name() string { return SlidingKindName }

// Class returns spi.ClassRate.
func (SlidingKind) Class() spi.Class { return spi.ClassRate }

// Validate accepts exactly "permitLimit" (1 to MaxPermitLimit), "window"
// (at least MinWindow, in nanoseconds) and "segments" (2 to MaxSegments,
// dividing the window exactly). When several parameters are wrong, the
// error names the first in sorted order; the divisibility of the window by
// the segments is checked last and reported on "segments".
func (SlidingKind) Validate(p spi.Params) error {
	_, _, _, err := slidingParams(p)
	return err
}

// New builds an empty sliding window whose segments are aligned to now.
func (SlidingKind) New(p spi.Params, now time.Time) (spi.Limiter, error) {
	limit, window, segments, err := slidingParams(p)
	if err != nil {
		return nil, err
	}
	return newSliding(limit, window, segments, now), nil
}

// FixedSpec returns the spi.Spec of a fixed window admitting limit units per
// window, for rules. It does not validate; the registry does.
func FixedSpec(limit int64, window time.Duration) spi.Spec {
	return spi.Spec{Kind: FixedKindName, Params: spi.Params{
		ParamPermitLimit: limit,
		ParamWindow:      int64(window),
	}}
}

// SlidingSpec returns the spi.Spec of a sliding window admitting limit units
// per window, divided into segments, for rules. It does not validate; the
// registry does.
func SlidingSpec(limit int64, window time.Duration, segments int64) spi.Spec {
	return spi.Spec{Kind: SlidingKindName, Params: spi.Params{
		ParamPermitLimit: limit,
		ParamWindow:      int64(window),
		ParamSegments:    segments,
	}}
}
