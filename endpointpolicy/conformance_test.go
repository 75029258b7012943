package endpointpolicy_test

import (
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/sluicerpc/sluice/conformance"
	"github.com/sluicerpc/sluice/endpointpolicy"
	"github.com/sluicerpc/sluice/spi"
)

// Every built-in policy passes the endpoint policy conformance suite, on
// the suite's clock.

func TestConformanceCircuitBreaker(t *testing.T) {
	conformance.RunEndpointPolicyTests(t, func(*testing.T) (conformance.EndpointPolicyHarness, error) {
		return conformance.EndpointPolicyHarnessOf(func(clock spi.Clock) (spi.EndpointPolicy, error) {
			return endpointpolicy.NewCircuitBreaker(endpointpolicy.CircuitBreakerOptions{Clock: clock})
		}, conformance.EndpointPolicyCapabilities{Deterministic: true}), nil
	})
}

func TestConformanceAdaptiveThrottle(t *testing.T) {
	conformance.RunEndpointPolicyTests(t, func(*testing.T) (conformance.EndpointPolicyHarness, error) {
		return conformance.EndpointPolicyHarnessOf(func(clock spi.Clock) (spi.EndpointPolicy, error) {
			// Twins draw the same random sequence, so the throttle is
			// deterministic for the suite's differential checks.
			r := rand.New(rand.NewPCG(1, 2))
			var mu sync.Mutex
			return endpointpolicy.NewAdaptiveThrottle(endpointpolicy.AdaptiveThrottleOptions{Clock: clock, Rand: func() float64 {
				mu.Lock()
				defer mu.Unlock()
				return r.Float64()
			}})
		}, conformance.EndpointPolicyCapabilities{Deterministic: true}), nil
	})
}

func TestConformanceEndpointConcurrency(t *testing.T) {
	conformance.RunEndpointPolicyTests(t, func(*testing.T) (conformance.EndpointPolicyHarness, error) {
		return conformance.EndpointPolicyHarnessOf(func(spi.Clock) (spi.EndpointPolicy, error) {
			return endpointpolicy.NewEndpointConcurrency(3)
		}, conformance.EndpointPolicyCapabilities{Deterministic: true, Bounded: 3}), nil
	})
}
