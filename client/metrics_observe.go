package client

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/sluicerpc/sluice/endpointpolicy"
)

// clientObservers are the client's own metrics: observable instruments
// read at collection time from the endpoints' counters (endpointStats),
// the live connections and the endpoint policy, so they cost the call
// path nothing beyond the counters' atomic adds. One callback reports
// every instrument; it takes the client's and the policy's locks briefly
// and allocates (the breaker's Snapshot, the attribute sets).
type clientObservers struct {
	decisions                 metric.Int64ObservableCounter
	circuit, mode, generation metric.Int64ObservableGauge
	dials, reconnects         metric.Int64ObservableCounter
	live                      metric.Int64ObservableGauge
}

var (
	policyModes   = [...]PolicyMode{PolicyDisabled, PolicyCustom, PolicyCircuitBreaker}
	circuitStates = [...]endpointpolicy.CircuitState{endpointpolicy.Closed, endpointpolicy.Open, endpointpolicy.HalfOpen}
)

// registerClientObservers creates the client's observable instruments on
// meter and registers the callback that reads c for them.
func registerClientObservers(meter metric.Meter, c *Client) (metric.Registration, error) {
	var o clientObservers
	var errs []error
	counter := func(dst *metric.Int64ObservableCounter, name, unit, desc string) {
		var err error
		*dst, err = meter.Int64ObservableCounter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
	}
	gauge := func(dst *metric.Int64ObservableGauge, name, unit, desc string) {
		var err error
		*dst, err = meter.Int64ObservableGauge(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
	}
	counter(&o.decisions, "sluice.client.endpoint_policy.decisions", "{attempt}", "Endpoint attempts the endpoint policy decided, by endpoint, decision (allowed, refused) and, for a refusal, reason (endpoint_policy, policy_panic).")
	gauge(&o.circuit, "sluice.client.circuit_breaker.state", "1", "The circuit breaker's state per endpoint: 1 for the current state (closed, open, half_open), 0 for the others; none unless the breaker is enabled.")
	gauge(&o.mode, "sluice.client.endpoint_policy.mode", "1", "1 for the client's endpoint policy mode (disabled, custom, circuit_breaker), 0 for the others.")
	gauge(&o.generation, "sluice.client.endpoint_policy.generation", "{generation}", "The generation of the endpoint policy's last publication.")
	counter(&o.dials, "sluice.client.dials", "{dial}", "Connection attempts (TCP or Dialer, TLS, handshake) ended, by endpoint and outcome (ok, failed).")
	counter(&o.reconnects, "sluice.client.connections.reconnects", "{connection}", "Connections made to an endpoint after its first one.")
	gauge(&o.live, "sluice.client.connections.live", "{connection}", "Open connections per endpoint (those draining after a GoAway included).")
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return meter.RegisterCallback(func(_ context.Context, ob metric.Observer) error {
		o.observe(ob, c)
		return nil
	}, o.decisions, o.circuit, o.mode, o.generation, o.dials, o.reconnects, o.live)
}

func attrs(kv ...string) metric.ObserveOption {
	a := make([]attribute.KeyValue, 0, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		a = append(a, attribute.String(kv[i], kv[i+1]))
	}
	return metric.WithAttributes(a...)
}

func u64(v uint64) int64 { return int64(min(v, 1<<63-1)) }

// observe reports c; it runs at collection time only.
func (o *clientObservers) observe(ob metric.Observer, c *Client) {
	live := make([]int64, len(c.eps))
	c.mu.Lock()
	for cn := range c.conns {
		live[cn.ep.idx]++
	}
	c.mu.Unlock()
	for _, ep := range c.eps {
		s := &ep.stats
		ob.ObserveInt64(o.decisions, u64(s.allowed.Load()), attrs("endpoint", ep.addr, "decision", "allowed"))
		ob.ObserveInt64(o.decisions, u64(s.refused.Load()), attrs("endpoint", ep.addr, "decision", "refused", "reason", "endpoint_policy"))
		ob.ObserveInt64(o.decisions, u64(s.panicked.Load()), attrs("endpoint", ep.addr, "decision", "refused", "reason", "policy_panic"))
		ob.ObserveInt64(o.dials, u64(s.dialsOK.Load()), attrs("endpoint", ep.addr, "outcome", "ok"))
		ob.ObserveInt64(o.dials, u64(s.dialsFailed.Load()), attrs("endpoint", ep.addr, "outcome", "failed"))
		ob.ObserveInt64(o.reconnects, u64(s.reconnects()), attrs("endpoint", ep.addr))
		ob.ObserveInt64(o.live, live[ep.idx], attrs("endpoint", ep.addr))
	}

	pc := &c.policy
	pc.mu.Lock()
	mode, gen, breaker := pc.mode, pc.gen, pc.breaker
	pc.mu.Unlock()
	for _, m := range policyModes {
		ob.ObserveInt64(o.mode, b2i(m == mode), attrs("mode", m.String()))
	}
	ob.ObserveInt64(o.generation, u64(gen))
	if breaker == nil {
		return
	}
	// An endpoint the breaker has not seen yet has a closed circuit.
	state := make(map[string]endpointpolicy.CircuitState, len(c.eps))
	for _, s := range breaker.Snapshot() {
		state[s.Endpoint] = s.State
	}
	for _, ep := range c.eps {
		cur := state[ep.addr]
		for _, st := range circuitStates {
			ob.ObserveInt64(o.circuit, b2i(st == cur), attrs("endpoint", ep.addr, "state", st.String()))
		}
	}
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
