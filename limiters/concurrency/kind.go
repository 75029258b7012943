package concurrency

import (
	"time"

	"github.com/sluicerpc/sluice/spi"
)

// KindName is the registry name of this limiter kind.
const KindName = "concurrency"

// ParamLimit is the name of the only parameter: the maximum number of units
// held at once.
const ParamLimit = "limit"

// Kind is the spi.LimiterKind for concurrency limiters. It is registered in
// spi.DefaultRegistry when this package is imported.
type Kind struct{}

func init() { spi.DefaultRegistry.MustRegister(Kind{}) }

// Name returns "concurrency".
func (Kind) Name() string { return KindName }

// Class returns spi.ClassConcurrency.
func (Kind) Class() spi.Class { return spi.ClassConcurrency }

// Validate accepts exactly one parameter, "limit", in [1, MaxLimit].
func (Kind) Validate(p spi.Params) error {
	_, err := limitOf(p)
	return err
}

// New builds a Limiter from p. now is ignored.
func (Kind) New(p spi.Params, _ time.Time) (spi.Limiter, error) {
	limit, err := limitOf(p)
	if err != nil {
		return nil, err
	}
	return New(limit), nil
}

// Spec returns the spi.Spec of a concurrency limit, for rules.
func Spec(limit int64) spi.Spec {
	return spi.Spec{Kind: KindName, Params: spi.Params{ParamLimit: limit}}
}

func limitOf(p spi.Params) (int64, error) {
	for name := range p {
		if name != ParamLimit {
			return 0, spi.InvalidParam(name, "unknown parameter for kind %q (want only %q)", KindName, ParamLimit)
		}
	}
	limit, ok := p.Int(ParamLimit)
	if !ok {
		return 0, spi.InvalidParam(ParamLimit, "required")
	}
	return limit, checkLimit(limit)
}

func checkLimit(limit int64) error {
	if limit < 1 || limit > MaxLimit {
		return spi.InvalidParam(ParamLimit, "must be between 1 and %d, got %d", MaxLimit, limit)
	}
	return nil
}
