package config

import "github.com/sluicerpc/sluice/endpointpolicy"

// ClientSettings are a document's client section converted to the values
// the client takes.
type ClientSettings struct {
	// CircuitBreaker is the circuit breaker to enable
	// (client.EnableCircuitBreaker, or UpdateCircuitBreaker when it is
	// enabled already); nil when the endpoint policy is disabled
	// (client.DisableEndpointPolicy).
	CircuitBreaker *endpointpolicy.CircuitBreakerOptions
}

// ClientSettings converts the client section, checking its values as
// endpointpolicy does, with the document's field paths and lines.
func (doc *Document) ClientSettings() (ClientSettings, error) {
	ps := &problems{pos: doc.pos}
	var out ClientSettings
	if doc.Client == nil || doc.Client.EndpointPolicy == nil || doc.Client.EndpointPolicy.Mode != "circuit_breaker" {
		return out, nil
	}
	const base = "client.endpoint_policy.circuit_breaker"
	o := endpointpolicy.CircuitBreakerOptions{}
	if cb := doc.Client.EndpointPolicy.CircuitBreaker; cb != nil {
		o = endpointpolicy.CircuitBreakerOptions{
			MinimumThroughput: cb.MinimumThroughput,
			FailureRatio:      cb.FailureRatio,
			SamplingDuration:  cb.SamplingDuration.Std(),
			BreakDuration:     cb.BreakDuration.Std(),
			HalfOpenMaxCalls:  cb.HalfOpenMaxCalls,
		}
		if r := cb.FailureRatio; r < 0 || r > 1 {
			ps.add(base+".failure_ratio", "must be in (0, 1] (0 = %v), got %v", endpointpolicy.DefaultFailureRatio, r)
		}
	}
	if len(ps.list) == 0 {
		if err := o.Validate(); err != nil {
			ps.add(base, "%v", err)
		}
	}
	if err := ps.err(doc.name); err != nil {
		return ClientSettings{}, err
	}
	out.CircuitBreaker = &o
	return out, nil
}
