package endpointpolicy

import "fmt"

// CircuitState is the state of one endpoint's circuit.
type CircuitState uint8

const (
	// Closed: attempts are allowed and their outcomes sampled.
	Closed CircuitState = iota
	// Open: attempts are refused until BreakDuration has passed since the
	// circuit opened.
	Open
	// HalfOpen: up to HalfOpenMaxCalls probes are in flight; the first
	// probe success closes the circuit, a probe failure reopens it.
	HalfOpen
)

// String returns "closed", "open" or "half_open".
func (s CircuitState) String() string {
	switch s {
	case Closed:
		return "closed"
	case Open:
		return "open"
	case HalfOpen:
		return "half_open"
	}
	return fmt.Sprintf("CircuitState(%d)", uint8(s))
}
