package client

import (
	"fmt"

	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/protocol/status"
)

// refusals are the endpoint policy's refusals of one call since it last
// waited: a refused attempt was never written, so the call moves on to an
// endpoint not refused yet; when every endpoint has refused, the call
// fails (or waits) with the shortest hint.
type refusals struct {
	mask     uint64 // refused endpoints (the first 64; see n)
	n        int    // refusals counted, which bounds the round beyond 64 endpoints
	shortest *status.Error
}

// policyRefusal returns the policy's refusal of an attempt: not a panic in
// TryAcquire (an Internal error, which is not retried).
func policyRefusal(out outcome, err error) (*status.Error, bool) {
	if out != outcomePolicyRejected {
		return nil, false
	}
	st, ok := status.FromError(err)
	return st, ok && st.Code == protocol.CodeResourceExhausted
}

// add records ep's refusal st and reports whether every endpoint has now
// refused.
func (r *refusals) add(c *Client, ep *endpoint, st *status.Error) bool {
	r.mask = markTried(r.mask, ep)
	r.n++
	if r.shortest == nil || st.RetryAfter > 0 && (r.shortest.RetryAfter == 0 || st.RetryAfter < r.shortest.RetryAfter) {
		r.shortest = st
	}
	return r.n >= len(c.eps) || !c.untried(r.mask)
}

// err is the error of a call every endpoint refused: the refusal itself
// with one endpoint, else one that says so, with the shortest hint.
func (r *refusals) err(c *Client) *status.Error {
	if len(c.eps) == 1 {
		return r.shortest
	}
	return &status.Error{
		Code: protocol.CodeResourceExhausted, Reason: r.shortest.Reason, RetryAfter: r.shortest.RetryAfter,
		Message: fmt.Sprintf("all %d endpoints refused by the client's endpoint policy", len(c.eps)),
	}
}

func (r *refusals) reset() { *r = refusals{} }
