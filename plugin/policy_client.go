package plugin

import (
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicerpc/sluice/conformance/capabilities"
	"github.com/sluicerpc/sluice/plugin/internal/pb"
	"github.com/sluicerpc/sluice/spi"
)

// EndpointPolicies returns the names of the endpoint policies the plugin
// serves, in the order it serves them.
func (p *Plugin) EndpointPolicies() []string {
	names := make([]string, len(p.policies))
	for i, info := range p.policies {
		names[i] = info.GetName()
	}
	return names
}

func (p *Plugin) policyInfo(name string) (*pb.PolicyInfo, error) {
	for _, info := range p.policies {
		if info.GetName() == name {
			return info, nil
		}
	}
	return nil, fmt.Errorf("sluice/plugin: the plugin serves no endpoint policy %q (it serves %q)", name, p.EndpointPolicies())
}

// EndpointPolicyCapabilities returns the conformance capabilities the
// plugin declared for the endpoint policy name
// (EndpointPolicyEntry.Capabilities), and false if it declared none or
// serves no such policy.
func (p *Plugin) EndpointPolicyCapabilities(name string) (capabilities.EndpointPolicy, bool) {
	info, err := p.policyInfo(name)
	if err != nil || info.GetCapabilities() == nil {
		return capabilities.EndpointPolicy{}, false
	}
	c := info.GetCapabilities()
	return capabilities.EndpointPolicy{Deterministic: c.GetDeterministic(), Bounded: int(c.GetBounded())}, true
}

// NewEndpointPolicy creates an instance of the plugin's endpoint policy
// name and returns its proxy. Each call creates a fresh instance, with
// state of its own. The instance lives in the plugin until the proxy is
// closed (or garbage collected).
func (p *Plugin) NewEndpointPolicy(name string, opts ...PolicyOption) (*EndpointPolicyClient, error) {
	if _, err := p.policyInfo(name); err != nil {
		return nil, err
	}
	var o policyOptions
	for _, opt := range opts {
		opt(&o)
	}
	if o.clock == nil {
		o.clock = spi.NewMonotonicClock()
	}
	c := p.watch.begin()
	defer c.end()
	r, err := p.policyRPC.NewPolicy(c.ctx, &pb.NewPolicyRequest{Name: name, Now: toTime(o.clock.Now())})
	if err != nil {
		return nil, p.failure(c, fmt.Sprintf("endpoint policy %q", name), "new", err, true)
	}
	ep := &EndpointPolicyClient{p: p, name: name, id: r.GetId(), clock: o.clock}
	ep.cleanup = runtime.AddCleanup(ep, p.dropPolicy, ep.id)
	return ep, nil
}

func (p *Plugin) dropPolicy(id uint64) {
	if p.closed.Load() {
		return
	}
	c := p.watch.begin()
	defer c.end()
	if _, err := p.policyRPC.DropPolicy(c.ctx, &pb.DropPolicyRequest{Id: id}); err != nil {
		p.logger.Debug("dropping a plugin endpoint policy failed", "id", id, "error", err)
	}
}

// EndpointPolicyClient is an endpoint policy instance living in a plugin,
// seen from the host. It implements spi.EndpointPolicy and io.Closer; every
// call crosses the process boundary (tens of microseconds), so a plug-in
// policy suits one that is remote anyway or coarse-grained. It is safe for
// concurrent use.
//
// Decisions, tokens and outcomes cross exactly (RetryAfter to the
// nanosecond). Failures: when the plugin cannot be reached, TryAcquire
// refuses (Allowed false, RetryAfter 0) and Report does nothing; both are
// counted by Plugin.Failures, remembered by Err and Plugin.Err, and
// logged. A panic of the policy's TryAcquire in the plugin is re-raised in
// the host's caller; a panic of its Report is recovered and logged in the
// plugin, and Report returns normally.
type EndpointPolicyClient struct {
	clock   spi.Clock
	p       *Plugin
	name    string
	id      uint64
	cleanup runtime.Cleanup
	closed  atomic.Bool

	errMu   sync.Mutex
	lastErr error
}

var (
	_ spi.EndpointPolicy = (*EndpointPolicyClient)(nil)
	_ io.Closer          = (*EndpointPolicyClient)(nil)
)

// ErrEndpointPolicyClosed is what Err reports after TryAcquire was called
// on a closed EndpointPolicyClient.
var ErrEndpointPolicyClosed = errors.New("sluice/plugin: endpoint policy closed")

// Name returns the name of the plugin's policy.
func (e *EndpointPolicyClient) Name() string { return e.name }

// Plugin returns the plugin that serves e.
func (e *EndpointPolicyClient) Plugin() *Plugin { return e.p }

// Err returns the last failure of a call on e, or nil.
func (e *EndpointPolicyClient) Err() error {
	e.errMu.Lock()
	defer e.errMu.Unlock()
	return e.lastErr
}

func (e *EndpointPolicyClient) setErr(err error) {
	e.errMu.Lock()
	e.lastErr = err
	e.errMu.Unlock()
}

func (e *EndpointPolicyClient) fail(c call, op string, err error, reraise bool) {
	e.setErr(e.p.failure(c, fmt.Sprintf("endpoint policy %q", e.name), op, err, reraise))
}

// TryAcquire asks the plugin's policy. If the plugin cannot be reached, or
// e is closed, it refuses; see Err.
func (e *EndpointPolicyClient) TryAcquire(endpoint, method string) spi.EndpointDecision {
	if e.closed.Load() {
		e.setErr(ErrEndpointPolicyClosed)
		return spi.EndpointDecision{}
	}
	c := e.p.watch.begin()
	defer c.end()
	r, err := e.p.policyRPC.TryAcquire(c.ctx, &pb.PolicyAcquireRequest{Id: e.id, Endpoint: endpoint, Method: method, Now: toTime(e.clock.Now())})
	if err != nil {
		e.fail(c, "try-acquire", err, true)
		return spi.EndpointDecision{}
	}
	return spi.EndpointDecision{Allowed: r.GetAllowed(), Token: r.GetToken(), RetryAfter: time.Duration(r.GetRetryAfterNanos())}
}

// Report reports the outcome of an allowed attempt to the plugin's policy.
// It never panics; a failure to reach the plugin is recorded (see Err). A
// Report on a closed e is ignored.
func (e *EndpointPolicyClient) Report(outcome spi.AttemptOutcome, token uint64) {
	if e.closed.Load() {
		return
	}
	c := e.p.watch.begin()
	defer c.end()
	if _, err := e.p.policyRPC.Report(c.ctx, &pb.PolicyReportRequest{Id: e.id, Outcome: toOutcome(outcome), Token: token, Now: toTime(e.clock.Now())}); err != nil {
		e.fail(c, "report", err, false)
	}
}

// Close drops the instance in the plugin (closing it there if it is an
// io.Closer). Later TryAcquire calls refuse and Reports are ignored. Close
// is idempotent and returns nil; it does not close the plugin.
func (e *EndpointPolicyClient) Close() error {
	if e.closed.Swap(true) {
		return nil
	}
	e.cleanup.Stop()
	e.p.dropPolicy(e.id)
	return nil
}

// PolicyOption configures Plugin.NewEndpointPolicy.
type PolicyOption func(*policyOptions)

type policyOptions struct{ clock spi.Clock }

// WithPolicyClock makes the policy instance run on clock: every call sends
// clock's reading, which the policy's clock in the plugin returns. The
// default is spi.NewMonotonicClock().
func WithPolicyClock(clock spi.Clock) PolicyOption {
	return func(o *policyOptions) { o.clock = clock }
}
