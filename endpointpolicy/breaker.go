package endpointpolicy

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicerpc/sluice/spi"
)

// CircuitBreaker is a per-endpoint circuit breaker (see CircuitState).
//
// Closed, it allows every attempt and samples the outcomes in a sliding
// window; once the window holds at least MinimumThroughput samples and
// failures/total >= FailureRatio, it opens. Open, it refuses with
// RetryAfter set to the rest of BreakDuration; the first TryAcquire after
// BreakDuration moves it to half-open. Half-open, it lets at most
// HalfOpenMaxCalls probes be in flight and refuses the rest (RetryAfter 0:
// it cannot know when a probe ends); the first probe success closes it
// with a fresh window, a probe failure reopens it for a new BreakDuration.
//
// Every state change starts a new generation of the endpoint's state, and
// a token carries the generation that issued it: like sony/gobreaker, the
// breaker ignores the report of an attempt allowed in an earlier
// generation. A probe result counts only for the half-open period that
// issued it, and an attempt allowed while closed but reported after the
// breaker opened is ignored. GoAway and caller cancellation are never
// samples; a half-open probe ending so frees its place for another probe.
//
// CircuitBreaker implements spi.EndpointPolicy; it is safe for concurrent
// use and allocates nothing on the steady path. The zero value is not
// usable; call NewCircuitBreaker.
type CircuitBreaker struct {
	cfg      atomic.Pointer[breakerConfig]
	updateMu sync.Mutex // serializes Update
	base     time.Time  // instant 0 of the breaker's times
	eps      endpointSet[breakerEndpoint]
}

var _ spi.EndpointPolicy = (*CircuitBreaker)(nil)

// breakerEndpoint is one endpoint's circuit; mu guards every field.
type breakerEndpoint struct {
	mu       sync.Mutex
	state    CircuitState
	gen      uint64 // incremented at every state change
	openedAt int64  // when it last opened, ns since base
	probes   int    // half-open probes in flight
	win      window // a = successes, b = failures
	tickets  ticketTable
}

func newBreakerEndpoint() *breakerEndpoint { return &breakerEndpoint{} }

// NewCircuitBreaker returns a breaker with o (zero fields take their
// defaults), or an error wrapping ErrInvalidOptions.
func NewCircuitBreaker(o CircuitBreakerOptions) (*CircuitBreaker, error) {
	cfg, err := newBreakerConfig(o)
	if err != nil {
		return nil, err
	}
	b := &CircuitBreaker{base: cfg.opts.Clock.Now()}
	b.cfg.Store(cfg)
	return b, nil
}

// Update replaces the breaker's options live, keeping every endpoint's
// state, generation, outstanding attempts and sample history; the new
// options apply from the next decision. So a lower FailureRatio or
// MinimumThroughput may open a closed circuit at its next sampled outcome,
// a new BreakDuration is measured from when an open circuit opened, a new
// SamplingDuration changes the pace at which the kept history expires, and
// a lower HalfOpenMaxCalls lets no new probe through until fewer are in
// flight. A nil Clock keeps the current clock; a nil IsFailure means
// DefaultIsFailure. If o is invalid, Update changes nothing and returns
// the error. Disabling the breaker and enabling it again is the client's
// business: it builds a fresh breaker, which starts with every circuit
// closed and no history.
func (b *CircuitBreaker) Update(o CircuitBreakerOptions) error {
	b.updateMu.Lock()
	defer b.updateMu.Unlock()
	if o.Clock == nil {
		o.Clock = b.cfg.Load().opts.Clock
	}
	cfg, err := newBreakerConfig(o)
	if err != nil {
		return err
	}
	b.cfg.Store(cfg)
	return nil
}

// Options returns the options in force, with defaults applied (IsFailure
// is nil when the default classifier is in force).
func (b *CircuitBreaker) Options() CircuitBreakerOptions { return b.cfg.Load().opts }

// since returns t as nanoseconds since the breaker's base.
func (b *CircuitBreaker) since(t time.Time) int64 { return int64(t.Sub(b.base)) }

// TryAcquire decides whether an attempt on endpoint may be sent; method is
// ignored. It never blocks.
func (b *CircuitBreaker) TryAcquire(endpoint, _ string) spi.EndpointDecision {
	ep, id := b.eps.get(endpoint, newBreakerEndpoint)
	if ep == nil {
		return spi.EndpointDecision{Allowed: true} // endpoint table full: untracked
	}
	// Closed, the decision needs no time: skip the clock.
	ep.mu.Lock()
	if ep.state == Closed {
		d := ep.admit(id)
		ep.mu.Unlock()
		return d
	}
	ep.mu.Unlock()
	cfg := b.cfg.Load()
	now := b.since(cfg.opts.Clock.Now()) // outside the lock
	ep.mu.Lock()
	defer ep.mu.Unlock()
	switch ep.state {
	case Open:
		breakFor := int64(cfg.opts.BreakDuration)
		if elapsed := now - ep.openedAt; elapsed < breakFor {
			return spi.EndpointDecision{RetryAfter: time.Duration(min(breakFor-elapsed, breakFor))}
		}
		ep.setState(HalfOpen)
		fallthrough
	case HalfOpen:
		if ep.probes >= cfg.opts.HalfOpenMaxCalls {
			return spi.EndpointDecision{}
		}
		tok, ok := ep.tickets.issue(id, ep.gen)
		if !ok {
			return spi.EndpointDecision{}
		}
		ep.probes++
		return spi.EndpointDecision{Allowed: true, Token: tok}
	default:
		return ep.admit(id)
	}
}

// admit allows a closed-state attempt (refused only if the ticket table is
// full).
func (ep *breakerEndpoint) admit(id uint32) spi.EndpointDecision {
	tok, ok := ep.tickets.issue(id, ep.gen)
	return spi.EndpointDecision{Allowed: ok, Token: tok}
}

// sample is an outcome as the breaker counts it.
type sample uint8

const (
	sampleNone sample = iota
	sampleSuccess
	sampleFailure
)

// Report records the outcome of the attempt token allowed. A zero,
// unknown, repeated or stale token is ignored. It never panics.
func (b *CircuitBreaker) Report(o spi.AttemptOutcome, token uint64) {
	ep := b.eps.byID(tokenEndpoint(token))
	if ep == nil {
		return
	}
	cfg := b.cfg.Load()
	s, now := b.classify(cfg, o)
	ep.mu.Lock()
	defer ep.mu.Unlock()
	gen, ok := ep.tickets.redeem(token)
	if !ok || gen != ep.gen {
		return
	}
	switch ep.state {
	case Closed:
		if s == sampleNone {
			return
		}
		ep.win.advance(now, cfg.width)
		if s == sampleFailure {
			ep.win.add(0, 1)
		} else {
			ep.win.add(1, 0)
		}
		if ep.shouldOpen(cfg) {
			ep.open(now)
		}
	case HalfOpen:
		ep.probes--
		switch s {
		case sampleFailure:
			ep.open(now)
		case sampleSuccess:
			ep.setState(Closed)
			ep.win.reset(now)
		}
	}
}

// classify samples o and, if it is a sample, reads the time, outside any
// lock. A panicking classifier or clock makes the outcome no sample.
func (b *CircuitBreaker) classify(cfg *breakerConfig, o spi.AttemptOutcome) (s sample, now int64) {
	if !sampled(o.Kind) {
		return sampleNone, 0
	}
	defer func() {
		if recover() != nil {
			s, now = sampleNone, 0
		}
	}()
	s = sampleSuccess
	if cfg.isFailure(o) {
		s = sampleFailure
	}
	return s, b.since(cfg.opts.Clock.Now())
}

// shouldOpen reports whether the window trips the breaker under cfg.
func (ep *breakerEndpoint) shouldOpen(cfg *breakerConfig) bool {
	total := ep.win.sum.a + ep.win.sum.b
	return total >= uint64(cfg.opts.MinimumThroughput) &&
		float64(ep.win.sum.b)/float64(total) >= cfg.opts.FailureRatio
}

// setState moves to s, starting a new generation.
func (ep *breakerEndpoint) setState(s CircuitState) {
	ep.state = s
	ep.gen++
	ep.probes = 0
}

// open opens the circuit at now.
func (ep *breakerEndpoint) open(now int64) {
	ep.setState(Open)
	ep.openedAt = now
	ep.win.reset(now)
}

// State returns endpoint's circuit state (Closed for an endpoint the
// breaker has not seen). An open circuit stays Open, past BreakDuration,
// until a TryAcquire moves it to half-open.
func (b *CircuitBreaker) State(endpoint string) CircuitState {
	ep, _ := b.eps.lookup(endpoint)
	if ep == nil {
		return Closed
	}
	ep.mu.Lock()
	defer ep.mu.Unlock()
	return ep.state
}
