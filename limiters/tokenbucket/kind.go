package tokenbucket

import (
	"time"

	"github.com/sluicerpc/sluice/spi"
)

// KindName is the registry name of this limiter kind.
const KindName = "tokenbucket"

// Kind is the spi.LimiterKind for token buckets. It is registered in
// spi.DefaultRegistry when this package is imported.
type Kind struct{}

func init() { spi.DefaultRegistry.MustRegister(Kind{}) }

var _ spi.LimiterKind = Kind{}

// Name returns "tokenbucket".
func (Kind) Name() string { return KindName }

// Class returns spi.ClassRate.
func (Kind) Class() spi.Class { return spi.ClassRate }

// Validate checks p completely (see ParseParams) without side effects.
func (Kind) Validate(p spi.Params) error {
	_, err := ParseParams(p)
	return err
}

// New builds a full token bucket from p with its origin at now.
func (Kind) New(p spi.Params, now time.Time) (spi.Limiter, error) {
	o, err := ParseParams(p)
	if err != nil {
		return nil, err
	}
	return newLimiter(o, now), nil
}

// Spec returns the spi.Spec of a discrete token bucket: tokensPerPeriod
// tokens are added at every period boundary, up to tokenLimit.
func Spec(tokenLimit, tokensPerPeriod int64, period time.Duration) spi.Spec {
	return Options{TokenLimit: tokenLimit, TokensPerPeriod: tokensPerPeriod, Period: period}.Spec()
}

// ContinuousSpec returns the spi.Spec of a continuous token bucket: tokens
// accrue at tokensPerPeriod/period, up to tokenLimit.
func ContinuousSpec(tokenLimit, tokensPerPeriod int64, period time.Duration) spi.Spec {
	return Options{TokenLimit: tokenLimit, TokensPerPeriod: tokensPerPeriod, Period: period, Continuous: true}.Spec()
}
