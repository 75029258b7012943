package client

import "sync/atomic"

// endpointStats are an endpoint's counters, kept whether or not the client
// has metrics (an atomic add each, no lock): the endpoint policy's
// decisions, counted where the client consults it (Client.admit), and the
// dials, counted as each ends (Client.dial). The observable instruments
// read them at collection (metrics_observe.go).
type endpointStats struct {
	allowed  atomic.Uint64 // attempts the policy allowed
	refused  atomic.Uint64 // attempts the policy refused (a decision)
	panicked atomic.Uint64 // attempts refused because TryAcquire panicked

	dialsOK     atomic.Uint64 // dials that gave a connection
	dialsFailed atomic.Uint64 // dials that failed (Close included)
}

// admit is policyControl.admit for an attempt on ep, counted: the
// disabled path (no policy published) counts nothing and stays one
// atomic load.
func (c *Client) admit(ep *endpoint, method string) (admitted, bool, error) {
	a, held, err := c.policy.admit(uintptr(ep.idx), ep.addr, method)
	switch {
	case held:
		ep.stats.allowed.Add(1)
	case err != nil:
		if _, refused := policyRefusal(outcomePolicyRejected, err); refused {
			ep.stats.refused.Add(1)
		} else {
			ep.stats.panicked.Add(1)
		}
	}
	return a, held, err
}

// dialed counts the end of a dial to ep.
func (s *endpointStats) dialed(err error) {
	if err == nil {
		s.dialsOK.Add(1)
	} else {
		s.dialsFailed.Add(1)
	}
}

// reconnects is the number of connections to the endpoint after its
// first one.
func (s *endpointStats) reconnects() uint64 {
	return max(s.dialsOK.Load(), 1) - 1
}
