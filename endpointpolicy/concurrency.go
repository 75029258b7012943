package endpointpolicy

import (
	"sync"
	"sync/atomic"

	"github.com/sluicerpc/sluice/spi"
)

// MaxEndpointConcurrency is the largest limit EndpointConcurrency accepts
// (the size of an endpoint's table of outstanding attempts).
const MaxEndpointConcurrency = maxSlots

// EndpointConcurrency allows at most Limit attempts in flight per
// endpoint. TryAcquire takes a slot with a compare-and-swap on the
// endpoint's in-flight counter, checked against the limit in force;
// Report releases it exactly once per token: the endpoint's table of
// outstanding tokens (bounded by the limit) makes a repeated, unknown or
// zero token release nothing. Refusals carry no RetryAfter: a slot frees
// when an attempt reports, not at a known time.
//
// EndpointConcurrency implements spi.EndpointPolicy, is safe for
// concurrent use and allocates nothing on the steady path. The zero value
// is not usable; call NewEndpointConcurrency.
type EndpointConcurrency struct {
	limit atomic.Int64
	eps   endpointSet[concurrencyEndpoint]
}

var _ spi.EndpointPolicy = (*EndpointConcurrency)(nil)

// concurrencyEndpoint is one endpoint's slots. inFlight counts slots
// taken; it is taken before its ticket is issued and released after its
// ticket is redeemed, so outstanding tickets never exceed it.
type concurrencyEndpoint struct {
	inFlight atomic.Int64
	mu       sync.Mutex // guards tickets
	tickets  ticketTable
}

func newConcurrencyEndpoint() *concurrencyEndpoint { return &concurrencyEndpoint{} }

func checkConcurrencyLimit(n int) error {
	if n < 1 || n > MaxEndpointConcurrency {
		return invalid("EndpointConcurrency limit", "is %d; it must be in [1, %d]", n, MaxEndpointConcurrency)
	}
	return nil
}

// NewEndpointConcurrency returns a policy allowing limit attempts in
// flight per endpoint, or an error wrapping ErrInvalidOptions if limit is
// outside [1, MaxEndpointConcurrency].
func NewEndpointConcurrency(limit int) (*EndpointConcurrency, error) {
	if err := checkConcurrencyLimit(limit); err != nil {
		return nil, err
	}
	c := &EndpointConcurrency{}
	c.limit.Store(int64(limit))
	return c, nil
}

// SetLimit changes the limit live for every endpoint. Lowering it revokes
// nothing: new attempts are refused until fewer than n are in flight.
// Raising it admits exactly the difference. An invalid n changes nothing
// and returns an error wrapping ErrInvalidOptions.
func (c *EndpointConcurrency) SetLimit(n int) error {
	if err := checkConcurrencyLimit(n); err != nil {
		return err
	}
	c.limit.Store(int64(n))
	return nil
}

// Limit returns the limit in force.
func (c *EndpointConcurrency) Limit() int { return int(c.limit.Load()) }

// InFlight returns the number of attempts in flight on endpoint.
func (c *EndpointConcurrency) InFlight(endpoint string) int {
	ep, _ := c.eps.lookup(endpoint)
	if ep == nil {
		return 0
	}
	return int(ep.inFlight.Load())
}

// TryAcquire takes one of endpoint's slots if fewer than Limit are in
// flight; method is ignored. It never blocks.
func (c *EndpointConcurrency) TryAcquire(endpoint, _ string) spi.EndpointDecision {
	ep, id := c.eps.get(endpoint, newConcurrencyEndpoint)
	if ep == nil {
		return spi.EndpointDecision{} // endpoint table full: cannot count
	}
	for {
		n := ep.inFlight.Load()
		if n >= c.limit.Load() {
			return spi.EndpointDecision{}
		}
		if ep.inFlight.CompareAndSwap(n, n+1) {
			break
		}
	}
	ep.mu.Lock()
	tok, ok := ep.tickets.issue(id, 0)
	ep.mu.Unlock()
	if !ok {
		ep.inFlight.Add(-1)
		return spi.EndpointDecision{}
	}
	return spi.EndpointDecision{Allowed: true, Token: tok}
}

// Report releases the slot token holds; a zero, unknown or repeated token
// releases nothing. The outcome is ignored. It never panics.
func (c *EndpointConcurrency) Report(_ spi.AttemptOutcome, token uint64) {
	ep := c.eps.byID(tokenEndpoint(token))
	if ep == nil {
		return
	}
	ep.mu.Lock()
	_, ok := ep.tickets.redeem(token)
	ep.mu.Unlock()
	if ok {
		ep.inFlight.Add(-1)
	}
}
