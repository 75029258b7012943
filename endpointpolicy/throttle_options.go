package endpointpolicy

import (
	"errors"
	"math"
	"math/rand/v2"
	"time"

	"github.com/sluicerpc/sluice/spi"
)

// Adaptive throttle defaults, taken by zero-valued option fields.
const (
	DefaultThrottleK      = 2.0
	DefaultThrottleWindow = 2 * time.Minute
)

// AdaptiveThrottleOptions configures an AdaptiveThrottle. A zero-valued
// field takes its default, so the zero value is a valid configuration.
type AdaptiveThrottleOptions struct {
	// K is the SRE multiplier: the throttle starts rejecting once
	// requests exceed K times accepts. Lower is more aggressive. Default
	// 2; at least 1 and finite.
	K float64
	// Window is the span of the trailing window of requests and accepts,
	// kept in 10 time buckets of Window/10 each. Default 2 minutes;
	// positive.
	Window time.Duration
	// Clock supplies the time. nil means spi.SystemClock.
	Clock spi.Clock
	// Rand returns a uniform random number in [0, 1); an attempt is
	// rejected when Rand() < the reject probability. It is called without
	// any lock held (and only when the probability is positive) and must be
	// safe for concurrent use. nil means math/rand/v2's Float64.
	Rand func() float64
}

// Validate reports every invalid field, naming it, in one error wrapping
// ErrInvalidOptions; it returns nil if o is valid (zero fields included).
func (o AdaptiveThrottleOptions) Validate() error {
	var errs []error
	if k := o.K; k != 0 && !(k >= 1 && !math.IsInf(k, 1)) {
		errs = append(errs, invalid("AdaptiveThrottleOptions.K", "is %v; it must be finite and at least 1 (0 means the default %v)", k, DefaultThrottleK))
	}
	if o.Window < 0 {
		errs = append(errs, invalid("AdaptiveThrottleOptions.Window", "is %v; it must be positive (0 means the default %v)", o.Window, DefaultThrottleWindow))
	}
	return errors.Join(errs...)
}

func (o AdaptiveThrottleOptions) withDefaults() AdaptiveThrottleOptions {
	if o.K == 0 {
		o.K = DefaultThrottleK
	}
	if o.Window == 0 {
		o.Window = DefaultThrottleWindow
	}
	if o.Clock == nil {
		o.Clock = spi.SystemClock{}
	}
	if o.Rand == nil {
		o.Rand = rand.Float64
	}
	return o
}

// RejectProbability is the SRE client-side throttling formula:
// max(0, (requests - k*accepts) / (requests + 1)).
func RejectProbability(requests, accepts uint64, k float64) float64 {
	return max(0, (float64(requests)-k*float64(accepts))/(float64(requests)+1))
}
