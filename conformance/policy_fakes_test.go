package conformance

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicerpc/sluice/spi"
)

// This file holds small endpoint policies for the suite's own tests: a
// correct per-endpoint bound and a correct breaker, each with switches
// that break one contract on purpose.

// boundFaults are the ways a per-endpoint bound can be broken.
type boundFaults struct {
	panicUnknown bool // Report panics on a token it does not hold
	doubleCredit bool // a repeated Report frees its slot again
	racy         bool // check, then increment: concurrent callers overshoot
	leak         bool // Report forgets the token but never frees its slot
}

// boundPolicy allows at most limit unreported attempts per endpoint.
type boundPolicy struct {
	f     boundFaults
	limit int

	// window counts racy callers between their check and their act, and
	// inside those in TryAcquire at all: a racy caller yields after its
	// check and, while another caller is inside, waits there until that
	// one has checked too (at most a second), so the check-then-act
	// overlaps by construction rather than by scheduling luck.
	window, inside atomic.Int64

	mu       sync.Mutex
	next     uint64
	held     map[string]int
	tokens   map[uint64]string // outstanding token -> endpoint
	reported map[uint64]string // doubleCredit: tokens already reported
}

func newBoundPolicy(f boundFaults, limit int) *boundPolicy {
	return &boundPolicy{f: f, limit: limit, held: map[string]int{}, tokens: map[uint64]string{}, reported: map[uint64]string{}}
}

func (p *boundPolicy) TryAcquire(endpoint, _ string) spi.EndpointDecision {
	if p.f.racy {
		p.inside.Add(1)
		defer p.inside.Add(-1)
		p.mu.Lock()
		n := p.held[endpoint]
		p.mu.Unlock()
		if n >= p.limit {
			return spi.EndpointDecision{}
		}
		p.window.Add(1)
		defer p.window.Add(-1)
		runtime.Gosched()
		for deadline := time.Now().Add(time.Second); p.inside.Load() > 1 && p.window.Load() < 2 && time.Now().Before(deadline); {
			runtime.Gosched()
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.f.racy && p.held[endpoint] >= p.limit {
		return spi.EndpointDecision{}
	}
	p.held[endpoint]++
	p.next++
	p.tokens[p.next] = endpoint
	return spi.EndpointDecision{Allowed: true, Token: p.next}
}

func (p *boundPolicy) Report(_ spi.AttemptOutcome, token uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	ep, ok := p.tokens[token]
	if !ok {
		if p.f.panicUnknown {
			panic("boundPolicy: unknown token")
		}
		if ep, ok := p.reported[token]; ok && p.f.doubleCredit {
			p.held[ep]--
		}
		return
	}
	delete(p.tokens, token)
	if p.f.doubleCredit {
		p.reported[token] = ep
	}
	if !p.f.leak {
		p.held[ep]--
	}
}

const fakeBound = 3

func boundHarness(f boundFaults) EndpointPolicyHarness {
	return EndpointPolicyHarnessOf(func(spi.Clock) (spi.EndpointPolicy, error) { return newBoundPolicy(f, fakeBound), nil },
		EndpointPolicyCapabilities{Deterministic: true, Bounded: fakeBound})
}

// breakerFaults are the ways a breaker can be broken.
type breakerFaults struct {
	zeroTokenFails bool // a Report of token 0 counts as a failure of the last endpoint asked
	doubleCount    bool // a repeated Report counts its outcome again
}

// breakerPolicy is a consecutive-failure circuit breaker per endpoint:
// breakerThreshold failures in a row open it for breakerCooldown
// (refusals carry the time left); then it lets one probe through, whose
// success closes it and whose failure opens it again.
type breakerPolicy struct {
	f     breakerFaults
	clock spi.Clock

	mu     sync.Mutex
	next   uint64
	states map[string]*breakerState
	tokens map[uint64]breakerToken
	done   map[uint64]breakerToken // doubleCount: tokens already reported
	last   string
}

type breakerState struct {
	fails     int
	openUntil time.Time // zero: closed
	probing   bool
}

type breakerToken struct {
	endpoint string
	probe    bool
}

const (
	breakerThreshold = 3
	breakerCooldown  = 10 * time.Second
)

func newBreakerPolicy(f breakerFaults, clock spi.Clock) *breakerPolicy {
	return &breakerPolicy{f: f, clock: clock, states: map[string]*breakerState{}, tokens: map[uint64]breakerToken{}, done: map[uint64]breakerToken{}}
}

func (p *breakerPolicy) state(endpoint string) *breakerState {
	s, ok := p.states[endpoint]
	if !ok {
		s = &breakerState{}
		p.states[endpoint] = s
	}
	return s
}

func (p *breakerPolicy) TryAcquire(endpoint, _ string) spi.EndpointDecision {
	now := p.clock.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.last = endpoint
	s := p.state(endpoint)
	probe := false
	if !s.openUntil.IsZero() {
		if now.Before(s.openUntil) {
			return spi.EndpointDecision{RetryAfter: s.openUntil.Sub(now)}
		}
		if s.probing {
			return spi.EndpointDecision{}
		}
		s.probing, probe = true, true
	}
	p.next++
	p.tokens[p.next] = breakerToken{endpoint, probe}
	return spi.EndpointDecision{Allowed: true, Token: p.next}
}

func isFailure(o spi.AttemptOutcome) bool {
	switch o.Kind {
	case spi.OutcomeSendFailure, spi.OutcomeConnectionClosed, spi.OutcomeDeadlineExceeded:
		return true
	case spi.OutcomeRemoteError:
		return o.Code == codeUnavailable
	}
	return false
}

func (p *breakerPolicy) Report(o spi.AttemptOutcome, token uint64) {
	now := p.clock.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	tok, ok := p.tokens[token]
	if !ok {
		switch {
		case token == 0 && p.f.zeroTokenFails && p.last != "":
			tok = breakerToken{endpoint: p.last}
			o = spi.AttemptOutcome{Kind: spi.OutcomeConnectionClosed}
		case p.f.doubleCount:
			if tok, ok = p.done[token]; !ok {
				return
			}
			tok.probe = false
		default:
			return
		}
	} else {
		delete(p.tokens, token)
		if p.f.doubleCount {
			p.done[token] = tok
		}
	}
	s := p.state(tok.endpoint)
	if tok.probe {
		s.probing = false
	}
	switch {
	case isFailure(o):
		s.fails++
		if tok.probe || s.fails >= breakerThreshold {
			s.openUntil, s.fails = now.Add(breakerCooldown), 0
		}
	case o.Kind == spi.OutcomeSuccess || o.Kind == spi.OutcomeRemoteError:
		s.fails = 0
		if tok.probe {
			s.openUntil = time.Time{}
		}
	}
}

func breakerHarness(f breakerFaults) EndpointPolicyHarness {
	return EndpointPolicyHarnessOf(func(c spi.Clock) (spi.EndpointPolicy, error) { return newBreakerPolicy(f, c), nil },
		EndpointPolicyCapabilities{Deterministic: true})
}
