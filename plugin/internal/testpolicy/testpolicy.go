// Package testpolicy is a small endpoint policy used to test the plug-in
// bridge without depending on the endpointpolicy module: at most Bound
// unreported attempts per endpoint.
package testpolicy

import (
	"sync"

	"github.com/sluicerpc/sluice/conformance/capabilities"
	"github.com/sluicerpc/sluice/spi"
)

// Name is the name the test plugin serves the policy under.
const Name = "plugintest.bounded"

// Bound is the most unreported attempts the policy allows per endpoint.
const Bound = 4

// Policy allows at most Bound unreported attempts per endpoint. Tokens
// count up from 1; a Report of a token the policy does not hold is
// ignored. It reads no clock.
type Policy struct {
	mu     sync.Mutex
	next   uint64
	held   map[string]int
	tokens map[uint64]string // outstanding token -> endpoint
	closed bool
}

var _ spi.EndpointPolicy = (*Policy)(nil)

// New returns a fresh policy; it reads no clock.
func New(spi.Clock) spi.EndpointPolicy {
	return &Policy{held: map[string]int{}, tokens: map[uint64]string{}}
}

// TryAcquire allows the attempt if endpoint has fewer than Bound
// unreported attempts.
func (p *Policy) TryAcquire(endpoint, _ string) spi.EndpointDecision {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held[endpoint] >= Bound {
		return spi.EndpointDecision{}
	}
	p.held[endpoint]++
	p.next++
	p.tokens[p.next] = endpoint
	return spi.EndpointDecision{Allowed: true, Token: p.next}
}

// Report frees the slot of token, if the policy holds it.
func (p *Policy) Report(_ spi.AttemptOutcome, token uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	ep, ok := p.tokens[token]
	if !ok {
		return
	}
	delete(p.tokens, token)
	if p.held[ep]--; p.held[ep] == 0 {
		delete(p.held, ep)
	}
}

// Close marks the policy closed.
func (p *Policy) Close() error {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	return nil
}

// Closed reports whether Close was called.
func (p *Policy) Closed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed
}

// Capabilities describes Policy to the conformance suite.
func Capabilities() capabilities.EndpointPolicy {
	return capabilities.EndpointPolicy{Deterministic: true, Bounded: Bound}
}
