package endpointpolicy

import (
	"errors"
	"math"
	"time"

	"github.com/sluicerpc/sluice/spi"
)

// Circuit breaker defaults, taken by zero-valued option fields.
const (
	DefaultMinimumThroughput = 20
	DefaultFailureRatio      = 0.5
	DefaultSamplingDuration  = 30 * time.Second
	DefaultBreakDuration     = 10 * time.Second
	DefaultHalfOpenMaxCalls  = 1
)

// CircuitBreakerOptions configures a CircuitBreaker. A zero-valued field
// takes its default, so the zero value is a valid configuration.
type CircuitBreakerOptions struct {
	// MinimumThroughput is the number of outcomes the sampling window must
	// hold before the breaker may open. Default 20; at least 1.
	MinimumThroughput int
	// FailureRatio opens the breaker when failures/total in the sampling
	// window reaches it. Default 0.5; in (0, 1].
	FailureRatio float64
	// SamplingDuration is the span of the sliding sampling window, kept in
	// 10 time buckets of SamplingDuration/10 each. Default 30s; positive.
	SamplingDuration time.Duration
	// BreakDuration is how long an opened breaker refuses before it lets
	// probes through (half-open). Default 10s; positive.
	BreakDuration time.Duration
	// HalfOpenMaxCalls is the number of probes a half-open breaker lets be
	// in flight at once. Default 1; at least 1.
	HalfOpenMaxCalls int
	// Clock supplies the time. nil means spi.SystemClock in
	// NewCircuitBreaker, and keeps the breaker's current clock in Update.
	Clock spi.Clock
	// IsFailure classifies a sampled outcome as a failure. nil means
	// DefaultIsFailure. It is never asked about GoAway, caller
	// cancellation or undefined outcome kinds, which are not samples; it
	// is called without any lock held and must be safe for concurrent
	// use. If it panics, the outcome is not sampled.
	IsFailure func(spi.AttemptOutcome) bool
}

// Validate reports every invalid field, naming it, in one error wrapping
// ErrInvalidOptions; it returns nil if o is valid (zero fields included).
func (o CircuitBreakerOptions) Validate() error {
	var errs []error
	if o.MinimumThroughput < 0 {
		errs = append(errs, invalid("CircuitBreakerOptions.MinimumThroughput", "is %d; it must be at least 1 (0 means the default %d)", o.MinimumThroughput, DefaultMinimumThroughput))
	}
	if r := o.FailureRatio; math.IsNaN(r) || r < 0 || r > 1 {
		errs = append(errs, invalid("CircuitBreakerOptions.FailureRatio", "is %v; it must be in (0, 1] (0 means the default %v)", r, DefaultFailureRatio))
	}
	if o.SamplingDuration < 0 {
		errs = append(errs, invalid("CircuitBreakerOptions.SamplingDuration", "is %v; it must be positive (0 means the default %v)", o.SamplingDuration, DefaultSamplingDuration))
	}
	if o.BreakDuration < 0 {
		errs = append(errs, invalid("CircuitBreakerOptions.BreakDuration", "is %v; it must be positive (0 means the default %v)", o.BreakDuration, DefaultBreakDuration))
	}
	if o.HalfOpenMaxCalls < 0 {
		errs = append(errs, invalid("CircuitBreakerOptions.HalfOpenMaxCalls", "is %d; it must be at least 1 (0 means the default %d)", o.HalfOpenMaxCalls, DefaultHalfOpenMaxCalls))
	}
	return errors.Join(errs...)
}

// withDefaults returns o with every zero field replaced by its default
// (IsFailure stays nil: the breaker resolves it).
func (o CircuitBreakerOptions) withDefaults() CircuitBreakerOptions {
	if o.MinimumThroughput == 0 {
		o.MinimumThroughput = DefaultMinimumThroughput
	}
	if o.FailureRatio == 0 {
		o.FailureRatio = DefaultFailureRatio
	}
	if o.SamplingDuration == 0 {
		o.SamplingDuration = DefaultSamplingDuration
	}
	if o.BreakDuration == 0 {
		o.BreakDuration = DefaultBreakDuration
	}
	if o.HalfOpenMaxCalls == 0 {
		o.HalfOpenMaxCalls = DefaultHalfOpenMaxCalls
	}
	if o.Clock == nil {
		o.Clock = spi.SystemClock{}
	}
	return o
}

// breakerConfig is a validated configuration, published atomically; every
// decision reads one.
type breakerConfig struct {
	opts      CircuitBreakerOptions // defaults applied
	width     int64                 // sampling bucket width, ns
	isFailure func(spi.AttemptOutcome) bool
}

func newBreakerConfig(o CircuitBreakerOptions) (*breakerConfig, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	o = o.withDefaults()
	c := &breakerConfig{opts: o, width: max(int64(o.SamplingDuration)/windowBuckets, 1), isFailure: o.IsFailure}
	if c.isFailure == nil {
		c.isFailure = DefaultIsFailure
	}
	return c, nil
}
