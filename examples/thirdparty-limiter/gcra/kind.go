// Package gcra is a third-party sluice limiter kind: the Generic Cell Rate
// Algorithm, registered as "example.com/gcra". It depends on the sluice SPI
// only, and ships both as a library (register Kind{} in a spi.Registry) and
// as a plugin binary (see cmd/gcra-plugin).
//
// A GCRA limiter keeps one instant, the theoretical arrival time (TAT): the
// instant at which all the quota granted so far would be paid back at one
// unit per interval. A request for n units at now is granted iff
//
//	max(TAT, now) + n*interval - now <= burst*interval
//
// and then TAT becomes max(TAT, now) + n*interval. The debt at now is
// ceil((TAT-now)/interval) units; burst less the debt is available.
package gcra

import (
	"math"
	"time"

	"github.com/sluicerpc/sluice/spi"
)

// Name is the kind's registry name.
const Name = "example.com/gcra"

// Parameter names.
const (
	// ParamBurst is the most units granted at once, in [1, MaxBurst].
	ParamBurst = "burst"
	// ParamInterval is the time, in nanoseconds, that pays back one unit,
	// in [MinInterval, MaxInterval].
	ParamInterval = "interval"
)

// Parameter bounds.
const (
	MaxBurst    = 1 << 20
	MinInterval = time.Microsecond
	MaxInterval = 24 * time.Hour
	// MaxHorizon bounds burst*interval, so that instants computed from
	// the parameters never overflow.
	MaxHorizon = 1 << 60
)

// Kind is the GCRA limiter kind. The zero value is ready to use.
type Kind struct{}

var _ spi.LimiterKind = Kind{}

// Name returns "example.com/gcra".
func (Kind) Name() string { return Name }

// Class returns spi.ClassRate.
func (Kind) Class() spi.Class { return spi.ClassRate }

// Params returns the parameters of a limiter that grants at most burst units
// at once and pays back one unit every interval.
func Params(burst int64, interval time.Duration) spi.Params {
	return spi.Params{ParamBurst: burst, ParamInterval: int64(interval)}
}

// config is a validated parameter set.
type config struct {
	burst    int64
	interval int64 // ns
}

// parse validates p completely.
func parse(p spi.Params) (config, error) {
	for name := range p {
		if name != ParamBurst && name != ParamInterval {
			return config{}, spi.InvalidParam(name, "unknown parameter for %s", Name)
		}
	}
	burst, ok := p.Int(ParamBurst)
	if !ok {
		return config{}, spi.InvalidParam(ParamBurst, "is required")
	}
	if burst < 1 || burst > MaxBurst {
		return config{}, spi.InvalidParam(ParamBurst, "must be in [1, %d], got %d", MaxBurst, burst)
	}
	interval, ok := p.Duration(ParamInterval)
	if !ok {
		return config{}, spi.InvalidParam(ParamInterval, "is required")
	}
	if interval < MinInterval || interval > MaxInterval {
		return config{}, spi.InvalidParam(ParamInterval, "must be in [%v, %v], got %v", MinInterval, MaxInterval, interval)
	}
	if burst > MaxHorizon/int64(interval) {
		return config{}, spi.InvalidParam("", "burst*interval must not exceed %v", time.Duration(MaxHorizon))
	}
	return config{burst: burst, interval: int64(interval)}, nil
}

// Validate checks p: exactly "burst" and "interval", within bounds.
func (Kind) Validate(p spi.Params) error {
	_, err := parse(p)
	return err
}

// New returns a full limiter (TAT = now) with parameters p.
func (Kind) New(p spi.Params, now time.Time) (spi.Limiter, error) {
	c, err := parse(p)
	if err != nil {
		return nil, err
	}
	return &Limiter{cfg: c, tat: now.UnixNano(), nearAt: math.MinInt64}, nil
}
