package endpointpolicy

import "time"

// CircuitSnapshot is one endpoint's circuit at an instant.
type CircuitSnapshot struct {
	Endpoint string
	State    CircuitState
	// Successes and Failures are the samples in the sliding window (a
	// circuit's window is emptied when it opens and when it closes).
	Successes, Failures uint64
	// Outstanding is the number of allowed attempts not yet reported.
	Outstanding int
	// Probes is the number of half-open probes in flight.
	Probes int
	// RetryAfter, for an open circuit, is the time left until it lets
	// probes through (zero once BreakDuration has passed).
	RetryAfter time.Duration
}

// Snapshot returns every endpoint's circuit, sorted by endpoint, for
// observability. It allocates; it does not change any state (except for
// expiring old samples, which the next decision would do anyway).
func (b *CircuitBreaker) Snapshot() []CircuitSnapshot {
	cfg := b.cfg.Load()
	now := b.since(cfg.opts.Clock.Now())
	var out []CircuitSnapshot
	b.eps.each(func(name string, ep *breakerEndpoint) {
		ep.mu.Lock()
		defer ep.mu.Unlock()
		s := CircuitSnapshot{Endpoint: name, State: ep.state, Outstanding: ep.tickets.outstanding(), Probes: ep.probes}
		switch ep.state {
		case Closed:
			ep.win.advance(now, cfg.width)
			s.Successes, s.Failures = ep.win.sum.a, ep.win.sum.b
		case Open:
			breakFor := int64(cfg.opts.BreakDuration)
			s.RetryAfter = time.Duration(min(max(breakFor-(now-ep.openedAt), 0), breakFor))
		}
		out = append(out, s)
	})
	return out
}
