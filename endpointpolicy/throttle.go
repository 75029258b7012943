package endpointpolicy

import (
	"sync"
	"time"

	"github.com/sluicerpc/sluice/spi"
)

// AdaptiveThrottle is Google SRE client-side adaptive throttling per
// endpoint ("Handling Overload", Site Reliability Engineering, ch. 21).
// Over a trailing window it counts requests (every TryAcquire: every
// attempt the client wanted to send, refused ones included) and accepts
// (attempts the backend accepted), and refuses an attempt locally with
// probability max(0, (requests - K*accepts) / (requests + 1)), computed
// before the attempt itself is counted.
//
// An outcome is an accept when the endpoint answered and did not throttle:
// a success, or a remote error other than ResourceExhausted (8, sluice's
// admission refusal) and Unavailable (14, a stopping server). Send
// failures, lost connections, deadlines, throttling errors and undefined
// kinds are requests without an accept. A GoAway (the server did not
// process the request) and a caller cancellation say nothing about the
// backend's willingness: the attempt's request is withdrawn from the
// window (if its bucket is still there), as if it had never been counted.
//
// Refusals carry no RetryAfter: a probabilistic refusal has no date.
//
// AdaptiveThrottle implements spi.EndpointPolicy and is safe for
// concurrent use. The zero value is not usable; call NewAdaptiveThrottle.
type AdaptiveThrottle struct {
	opts  AdaptiveThrottleOptions // defaults applied
	width int64                   // bucket width, ns
	base  time.Time
	eps   endpointSet[throttleEndpoint]
}

var _ spi.EndpointPolicy = (*AdaptiveThrottle)(nil)

// throttleEndpoint is one endpoint's counts; mu guards every field.
type throttleEndpoint struct {
	mu      sync.Mutex
	win     window // a = requests, b = accepts
	tickets ticketTable
}

func newThrottleEndpoint() *throttleEndpoint { return &throttleEndpoint{} }

// NewAdaptiveThrottle returns a throttle with o (zero fields take their
// defaults), or an error wrapping ErrInvalidOptions.
func NewAdaptiveThrottle(o AdaptiveThrottleOptions) (*AdaptiveThrottle, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	o = o.withDefaults()
	return &AdaptiveThrottle{
		opts:  o,
		width: max(int64(o.Window)/windowBuckets, 1),
		base:  o.Clock.Now(),
	}, nil
}

// Options returns the throttle's options, with defaults applied.
func (t *AdaptiveThrottle) Options() AdaptiveThrottleOptions { return t.opts }

func (t *AdaptiveThrottle) since(x time.Time) int64 { return int64(x.Sub(t.base)) }

// TryAcquire counts a request on endpoint and decides whether to send it;
// method is ignored. It never blocks.
func (t *AdaptiveThrottle) TryAcquire(endpoint, _ string) spi.EndpointDecision {
	now := t.since(t.opts.Clock.Now())
	ep, id := t.eps.get(endpoint, newThrottleEndpoint)
	if ep == nil {
		return spi.EndpointDecision{Allowed: true} // endpoint table full: untracked
	}
	ep.mu.Lock()
	ep.win.advance(now, t.width)
	p := RejectProbability(ep.win.sum.a, ep.win.sum.b, t.opts.K)
	ep.win.add(1, 0)
	epoch := ep.win.epoch
	if p > 0 {
		ep.mu.Unlock()
		if t.opts.Rand() < p {
			return spi.EndpointDecision{}
		}
		ep.mu.Lock()
	}
	tok, ok := ep.tickets.issue(id, epoch)
	ep.mu.Unlock()
	return spi.EndpointDecision{Allowed: ok, Token: tok}
}

// verdict is what an outcome means to the throttle.
type verdict uint8

const (
	verdictRejected  verdict = iota // a request without an accept
	verdictAccepted                 // the backend accepted it
	verdictWithdrawn                // not a request after all
)

func throttleVerdict(o spi.AttemptOutcome) verdict {
	switch o.Kind {
	case spi.OutcomeSuccess:
		return verdictAccepted
	case spi.OutcomeRemoteError:
		if o.Code == codeResourceExhausted || o.Code == codeUnavailable {
			return verdictRejected
		}
		return verdictAccepted
	case spi.OutcomeGoAway, spi.OutcomeCancelled:
		return verdictWithdrawn
	}
	return verdictRejected
}

// Report records the outcome of the attempt token allowed. A zero,
// unknown or repeated token is ignored. It never panics.
func (t *AdaptiveThrottle) Report(o spi.AttemptOutcome, token uint64) {
	ep := t.eps.byID(tokenEndpoint(token))
	if ep == nil {
		return
	}
	v := throttleVerdict(o)
	var now int64
	if v == verdictAccepted {
		var ok bool
		if now, ok = t.readClock(); !ok {
			v = verdictRejected
		}
	}
	ep.mu.Lock()
	defer ep.mu.Unlock()
	epoch, ok := ep.tickets.redeem(token)
	if !ok {
		return
	}
	switch v {
	case verdictAccepted:
		ep.win.advance(now, t.width)
		ep.win.add(0, 1)
	case verdictWithdrawn:
		ep.win.withdrawA(epoch)
	}
}

// readClock reads the clock, outside any lock; false if it panicked.
func (t *AdaptiveThrottle) readClock() (now int64, ok bool) {
	defer func() {
		if recover() != nil {
			now, ok = 0, false
		}
	}()
	return t.since(t.opts.Clock.Now()), true
}

// ThrottleStats is one endpoint's throttle window at an instant.
type ThrottleStats struct {
	Requests, Accepts uint64
	// RejectProbability is the probability the next attempt is refused.
	RejectProbability float64
	// Outstanding is the number of allowed attempts not yet reported.
	Outstanding int
}

// Stats returns endpoint's counts in the trailing window (zero for an
// endpoint the throttle has not seen).
func (t *AdaptiveThrottle) Stats(endpoint string) ThrottleStats {
	ep, _ := t.eps.lookup(endpoint)
	if ep == nil {
		return ThrottleStats{}
	}
	now := t.since(t.opts.Clock.Now())
	ep.mu.Lock()
	defer ep.mu.Unlock()
	ep.win.advance(now, t.width)
	return ThrottleStats{
		Requests:          ep.win.sum.a,
		Accepts:           ep.win.sum.b,
		RejectProbability: RejectProbability(ep.win.sum.a, ep.win.sum.b, t.opts.K),
		Outstanding:       ep.tickets.outstanding(),
	}
}
