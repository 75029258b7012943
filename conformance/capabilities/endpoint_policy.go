package capabilities

import "fmt"

// MaxBounded is the largest EndpointPolicy.Bounded the suite accepts: it
// fills an endpoint to its bound several times per check.
const MaxBounded = 1 << 12

// EndpointPolicy is what the conformance suite needs to know about an
// endpoint policy (spi.EndpointPolicy) beyond the SPI. The zero value is
// valid: a policy the suite only checks for liveness, tolerance of junk
// tokens and safe concurrent use.
type EndpointPolicy struct {
	// Deterministic reports that two fresh policies given the same calls
	// at the same clock instants decide the same (Allowed and
	// RetryAfter; tokens may differ). It enables the suite's differential
	// checks, which compare a policy that received junk reports with a
	// twin that did not.
	Deterministic bool

	// Bounded, when positive, is the most attempts the policy allows on
	// one endpoint without their Report (a per-endpoint concurrency
	// limit, say): a healthy endpoint with nothing outstanding allows
	// exactly Bounded attempts, then refuses until a Report. The suite
	// uses one method per endpoint when it counts. 0 means the policy
	// declares no bound.
	Bounded int
}

// Validate reports what makes c unusable by the suite: a negative Bounded,
// or one above MaxBounded.
func (c EndpointPolicy) Validate() error {
	switch {
	case c.Bounded < 0:
		return fmt.Errorf("capabilities: negative Bounded %d", c.Bounded)
	case c.Bounded > MaxBounded:
		return fmt.Errorf("capabilities: Bounded %d is above %d", c.Bounded, MaxBounded)
	}
	return nil
}
