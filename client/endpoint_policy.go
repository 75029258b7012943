package client

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/sluicerpc/sluice/endpointpolicy"
	"github.com/sluicerpc/sluice/kernel"
	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/protocol/status"
	"github.com/sluicerpc/sluice/spi"
)

// PolicyMode is the client's endpoint admission mode.
type PolicyMode uint8

const (
	// PolicyDisabled: every endpoint attempt is sent.
	PolicyDisabled PolicyMode = iota
	// PolicyCustom: an application's spi.EndpointPolicy decides.
	PolicyCustom
	// PolicyCircuitBreaker: the built-in endpointpolicy.CircuitBreaker
	// decides.
	PolicyCircuitBreaker
)

func (m PolicyMode) String() string {
	switch m {
	case PolicyDisabled:
		return "disabled"
	case PolicyCustom:
		return "custom"
	case PolicyCircuitBreaker:
		return "circuit_breaker"
	}
	return fmt.Sprintf("PolicyMode(%d)", m)
}

// PolicySnapshot is the client's current endpoint admission: its mode and
// the generation of its last publication (0 before the first).
type PolicySnapshot struct {
	Generation uint64
	Mode       PolicyMode
}

// Errors of the endpoint policy controls.
var (
	// ErrNilPolicy: SetEndpointPolicy was given no policy.
	ErrNilPolicy = errors.New("sluice client: nil endpoint policy")
	// ErrPolicyModeConflict: the call needs another mode (a custom policy
	// and the circuit breaker are mutually exclusive: disable first).
	ErrPolicyModeConflict = errors.New("sluice client: endpoint policy mode conflict")
	// ErrClientClosed: the client is closed; nothing is published.
	ErrClientClosed = errors.New("sluice client: closed")
)

// policyControl publishes the endpoint policy through a generation cell:
// every attempt captures the current policy once (a lease), asks it,
// reports to it, and releases the lease; a replaced policy that is an
// io.Closer is closed when its last lease ends (policy_close.go). Writers
// are serialized by mu; the attempt path takes no lock.
type policyControl struct {
	cell kernel.Cell[spi.EndpointPolicy]

	mu      sync.Mutex
	gen     uint64
	mode    PolicyMode
	breaker *endpointpolicy.CircuitBreaker
	cur     *retirement // the closing state of the published policy; nil if none
	closed  bool
	logf    func(msg string, args ...any)

	pending sync.WaitGroup // retired policies not closed yet
}

// EndpointPolicy returns the current mode and generation.
func (c *Client) EndpointPolicy() PolicySnapshot {
	pc := &c.policy
	pc.mu.Lock()
	defer pc.mu.Unlock()
	return PolicySnapshot{Generation: pc.gen, Mode: pc.mode}
}

// SetEndpointPolicy makes p decide every later endpoint attempt, from the
// disabled mode or replacing the current custom policy. Attempts that the
// previous policy allowed still report to it; if it is an io.Closer it is
// closed once the last of them has reported. A nil p, a client in circuit
// breaker mode or a closed client change nothing and return an error.
func (c *Client) SetEndpointPolicy(p spi.EndpointPolicy) (uint64, error) {
	if p == nil {
		return 0, ErrNilPolicy
	}
	return c.policy.publish(PolicyCustom, p, nil, func(m PolicyMode) error {
		if m == PolicyCircuitBreaker {
			return fmt.Errorf("%w: the circuit breaker is enabled; disable it before setting a custom policy", ErrPolicyModeConflict)
		}
		return nil
	})
}

// EnableCircuitBreaker enables a fresh built-in circuit breaker with o,
// from the disabled mode only (a custom policy is exclusive with it; an
// enabled breaker is changed with UpdateCircuitBreaker). Invalid options
// change nothing.
func (c *Client) EnableCircuitBreaker(o endpointpolicy.CircuitBreakerOptions) (uint64, error) {
	b, err := endpointpolicy.NewCircuitBreaker(o)
	if err != nil {
		return 0, err
	}
	return c.policy.publish(PolicyCircuitBreaker, b, b, func(m PolicyMode) error {
		switch m {
		case PolicyCustom:
			return fmt.Errorf("%w: a custom endpoint policy is set; disable it before enabling the circuit breaker", ErrPolicyModeConflict)
		case PolicyCircuitBreaker:
			return fmt.Errorf("%w: the circuit breaker is already enabled; use UpdateCircuitBreaker", ErrPolicyModeConflict)
		}
		return nil
	})
}

// UpdateCircuitBreaker changes the enabled breaker's options live: its
// per-endpoint states and sample histories are kept. Invalid options, or
// another mode, change nothing.
func (c *Client) UpdateCircuitBreaker(o endpointpolicy.CircuitBreakerOptions) (uint64, error) {
	pc := &c.policy
	pc.mu.Lock()
	defer pc.mu.Unlock()
	switch {
	case pc.closed:
		return 0, ErrClientClosed
	case pc.mode != PolicyCircuitBreaker:
		return 0, fmt.Errorf("%w: the circuit breaker is not enabled (mode %v)", ErrPolicyModeConflict, pc.mode)
	}
	if err := pc.breaker.Update(o); err != nil {
		return 0, err
	}
	pc.gen++
	return pc.gen, nil
}

// DisableEndpointPolicy sends every later attempt without asking a policy.
// Attempts allowed before still report to the policy that allowed them.
// Disabling a disabled client changes nothing and returns its generation.
func (c *Client) DisableEndpointPolicy() (uint64, error) {
	pc := &c.policy
	pc.mu.Lock()
	if pc.closed {
		pc.mu.Unlock()
		return 0, ErrClientClosed
	}
	if pc.mode == PolicyDisabled {
		defer pc.mu.Unlock()
		return pc.gen, nil
	}
	old := pc.retire(pc.cell.Clear)
	pc.gen++
	gen := pc.gen
	pc.mode, pc.breaker, pc.cur = PolicyDisabled, nil, nil
	pc.mu.Unlock()
	if old != nil {
		pc.closeRetired(old)
	}
	return gen, nil
}

func (pc *policyControl) publish(mode PolicyMode, p spi.EndpointPolicy, b *endpointpolicy.CircuitBreaker, check func(PolicyMode) error) (uint64, error) {
	pc.mu.Lock()
	if pc.closed {
		pc.mu.Unlock()
		return 0, ErrClientClosed
	}
	if err := check(pc.mode); err != nil {
		pc.mu.Unlock()
		return 0, err
	}
	pc.gen++
	gen := pc.gen
	r := &retirement{pc: pc}
	old := pc.retire(func() { pc.cell.Publish(p, gen, r.onDrain) })
	pc.mode, pc.breaker, pc.cur = mode, b, r
	pc.mu.Unlock()
	if old != nil {
		pc.closeRetired(old)
	}
	return gen, nil
}

// close stops publication (Client.Close) and retires the current policy,
// closing it at once when nothing is outstanding.
func (pc *policyControl) close() {
	pc.mu.Lock()
	if pc.closed {
		pc.mu.Unlock()
		return
	}
	pc.closed = true
	old := pc.retire(pc.cell.Clear)
	pc.mode, pc.breaker, pc.cur = PolicyDisabled, nil, nil
	pc.mu.Unlock()
	if old != nil {
		pc.closeRetired(old)
	}
}

// admitted is an attempt's hold on the policy that allowed it.
type admitted struct {
	lease kernel.Lease[spi.EndpointPolicy]
	token uint64
	start time.Time
}

// admit asks the current policy about one attempt. It returns ok with no
// hold when no policy is published (the disabled path: one atomic load
// and no allocation), a hold when the policy allowed the attempt, or the
// refusal (a policy panic is a refusal with an Internal error).
func (pc *policyControl) admit(hint uintptr, endpoint, method string) (a admitted, held bool, err error) {
	l, ok := pc.cell.Acquire(hint)
	if !ok {
		return admitted{}, false, nil
	}
	d, perr := tryAcquire(l.Value(), endpoint, method)
	if perr != nil {
		l.Release()
		return admitted{}, false, perr
	}
	if !d.Allowed {
		l.Release()
		return admitted{}, false, &status.Error{
			Code: protocol.CodeResourceExhausted, Reason: "endpoint_policy", RetryAfter: d.RetryAfter,
			Message: "endpoint " + endpoint + " refused by the client's endpoint policy",
		}
	}
	return admitted{lease: l, token: d.Token, start: time.Now()}, true, nil
}

func tryAcquire(p spi.EndpointPolicy, endpoint, method string) (d spi.EndpointDecision, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = status.Errorf(protocol.CodeInternal, "the endpoint policy panicked in TryAcquire: %v", r)
		}
	}()
	return p.TryAcquire(endpoint, method), nil
}

// report tells the policy that allowed a the attempt's outcome, exactly
// once, then ends the hold. A panic in Report is logged and ignored.
// oneWay says the attempt was a one-way call, whose success is the write:
// no Response or Error frame arrives for it.
func (pc *policyControl) report(a admitted, out outcome, err error, oneWay bool) {
	defer a.lease.Release()
	o := attemptOutcome(out, err, time.Since(a.start), oneWay)
	defer func() {
		if r := recover(); r != nil {
			pc.logf("the endpoint policy panicked in Report", "panic", r, "outcome", o.Kind.String())
		}
	}()
	a.lease.Value().Report(o, a.token)
}

// attemptOutcome is what the policy is told about an attempt.
func attemptOutcome(out outcome, err error, elapsed time.Duration, oneWay bool) spi.AttemptOutcome {
	o := spi.AttemptOutcome{Code: uint8(status.Code(err)), Elapsed: elapsed}
	switch out {
	case outcomeSuccess:
		// A unary success is its Response; a one-way success is only the
		// write of its request, and no frame answers it.
		o.Kind, o.ResponseObserved = spi.OutcomeSuccess, err == nil && !oneWay
	case outcomeRemoteError:
		o.Kind, o.ResponseObserved = spi.OutcomeRemoteError, true
	case outcomeSendFailure, outcomeNotConnected:
		o.Kind = spi.OutcomeSendFailure
	case outcomeConnClosed:
		o.Kind = spi.OutcomeConnectionClosed
	case outcomeGoAway:
		o.Kind = spi.OutcomeGoAway
	case outcomeDeadlineExceeded:
		o.Kind = spi.OutcomeDeadlineExceeded
		o.ResponseObserved = err != nil && status.Code(err) == protocol.CodeDeadlineExceeded && !isContextError(err)
	default:
		// Cancelled by the caller, or abandoned by the client itself
		// before anything was sent (unknown method, oversized request):
		// nothing about the endpoint.
		o.Kind = spi.OutcomeCancelled
	}
	return o
}

// isContextError reports whether err is the caller's own context error
// (rather than the server's DeadlineExceeded answer).
func isContextError(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
}
