package client

import (
	"context"
	"errors"
	"time"

	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/protocol/status"
)

// invokeAttempts runs a call's attempts until one succeeds, one fails in a
// way that must not be retried, the attempts are exhausted or ctx ends. On
// success it returns the call, whose body holds the response (empty for a
// one-way call); the caller must give it back with c.calls.put. On
// failure the call is already back in the pool. sent is the number of
// attempts the endpoint policy let through (for the metrics; invoke).
//
// An attempt the endpoint policy refuses was never written: the call moves
// on to an endpoint the policy has not refused since the call last waited,
// and only a round in which every endpoint refused counts as an attempt,
// which fails with the shortest hint (see refusals). A RetryAfter hint is
// waited only when an attempt is left after it and the deadline fits the
// wait plus another attempt as long as the last one.
func (c *Client) invokeAttempts(ctx context.Context, method string, body []byte, oneWay bool, opts []CallOption) (cl *call, sent int, err error) {
	co := callOptions{maxAttempts: c.cfg.MaxAttempts}
	if _, ok := c.cfg.idempotent[method]; ok {
		co.idempotent = true
	}
	for _, o := range opts {
		co = o.apply(co)
	}
	cl = c.calls.get()
	if err := cl.md.prepare(&co); err != nil {
		c.calls.put(cl)
		return nil, 0, err
	}
	if err := cl.preparePolicy(c.cfg.comp, method, &co); err != nil {
		c.calls.put(cl)
		return nil, 0, err
	}
	err = c.attempts(ctx, &co, func(ep *endpoint) (outcome, error) {
		out, err := c.attempt(ctx, ep, method, body, oneWay, co.waitForReady, cl)
		if out != outcomePolicyRejected {
			sent++
		}
		return out, err
	}, shouldRetry)
	if err == nil {
		return cl, sent, nil
	}
	c.calls.put(cl)
	return nil, sent, err
}

// attempts runs try on endpoints until an attempt succeeds, one fails in a
// way retry says must not be retried, the attempts are exhausted or ctx
// ends, and returns the last error (nil on success): the retry loop shared
// by unary calls (invoke) and the opening of streams (openStream).
func (c *Client) attempts(ctx context.Context, co *callOptions, try func(*endpoint) (outcome, error), retryable func(outcome, error, bool) (bool, time.Duration)) error {
	var (
		tried   uint64 // endpoints an attempt went to
		ref     refusals
		lastErr error
	)
	for attempts := 0; ; {
		if err := ctxErr(ctx); err != nil {
			if lastErr == nil || !errors.Is(err, context.DeadlineExceeded) {
				lastErr = err
			}
			break
		}
		if c.isClosed() {
			lastErr = errClientClosed
			break
		}
		ep := c.pick(tried, ref.mask)
		begin := time.Now()
		out, err := try(ep)
		if out == outcomeSuccess {
			return nil
		}
		var retry bool
		var wait time.Duration
		if st, ok := policyRefusal(out, err); ok {
			if !ref.add(c, ep, st) {
				continue // another endpoint may allow it
			}
			// Every endpoint refused: one attempt, failed with the
			// shortest hint, which is worth waiting.
			st := ref.err(c)
			lastErr, retry, wait = st, st.RetryAfter > 0, st.RetryAfter
			attempts++
		} else {
			tried = markTried(tried, ep)
			lastErr = err
			retry, wait = retryable(out, err, co.idempotent)
			if !co.waitForReady || out != outcomeNotConnected {
				attempts++ // waiting for readiness, failed dials are not attempts
			}
		}
		if !retry || attempts >= co.maxAttempts {
			break // no attempt is left: the hint is not waited
		}
		if wait > 0 && !c.untried(tried|ref.mask) {
			// Only endpoints that asked us to wait are left: wait the
			// hint if it is within MaxRetryWait and the deadline leaves
			// room for another attempt after it.
			if wait > c.cfg.MaxRetryWait {
				c.logHintOverCap(wait)
				break
			}
			if !fits(ctx, wait, time.Since(begin)) {
				break
			}
			if err := c.sleep(ctx, wait); err != nil {
				lastErr = err
				break
			}
			ref.reset() // the policy may allow them now
		}
	}
	return lastErr
}

// fits reports whether ctx's deadline, if any, leaves room for a wait of
// wait and then an attempt as long as the last one (took). wait is a
// server's hint: it is compared, never added to, so that the largest hint
// the protocol carries cannot wrap the sum and pass.
func fits(ctx context.Context, wait, took time.Duration) bool {
	dl, ok := ctx.Deadline()
	return !ok || wait < time.Until(dl)-took
}

// ctxErr is ctx.Err(), or DeadlineExceeded when the deadline has passed
// and the context's timer has not fired yet.
func ctxErr(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
		return context.DeadlineExceeded
	}
	return nil
}

// shouldRetry decides whether an attempt that ended with out and err may be
// retried, and after which wait.
func shouldRetry(out outcome, err error, idempotent bool) (bool, time.Duration) {
	switch out {
	case outcomeSendFailure, outcomeNotConnected, outcomeGoAway:
		return true, 0
	case outcomeConnClosed:
		return idempotent && !errors.Is(err, errClientClosed), 0
	case outcomeRemoteError, outcomePolicyRejected:
		st, ok := status.FromError(err)
		if !ok {
			return false, 0
		}
		switch {
		case st.Code == protocol.CodeResourceExhausted && st.RetryAfter > 0 && (idempotent || st.Reason != "" || out == outcomePolicyRejected):
			// A reason (or the client's own policy) says the call never
			// ran; without one the handler did, and only an idempotent
			// call may run again.
			return true, st.RetryAfter
		case st.Code == protocol.CodeUnavailable && (idempotent || st.Reason != ""):
			// With a reason, a stopping server refused the request before
			// running it (docs/protocol.md): safe to send elsewhere.
			return true, 0
		}
	}
	return false, 0
}

// attempt is one endpoint attempt, admitted and reported by the endpoint
// policy current when it starts, if any: the policy that allows it, and
// only it, is told its outcome, exactly once, even if the policy is
// replaced or disabled meanwhile.
func (c *Client) attempt(ctx context.Context, ep *endpoint, method string, body []byte, oneWay, waitReady bool, cl *call) (outcome, error) {
	a, held, err := c.admit(ep, method)
	if err != nil {
		return outcomePolicyRejected, err
	}
	out, err := c.attemptOnce(ctx, ep, method, body, oneWay, waitReady, cl)
	if held {
		if out == outcomeRemoteError && status.Code(err) == protocol.CodeDeadlineExceeded && errors.Is(ctxErr(ctx), context.DeadlineExceeded) {
			// The server's copy of the caller's deadline (the time
			// budget) ended the call a moment before the caller's own
			// timer: the same outcome for the policy either way.
			out = outcomeDeadlineExceeded
		}
		c.policy.report(a, out, err, oneWay)
	}
	return out, err
}

// attemptOnce sends the request to ep and, unless one-way, waits for its
// answer. On outcomeSuccess the response body is in cl.body. waitReady
// makes it wait for ep's backoff instead of failing at once (connFor).
func (c *Client) attemptOnce(ctx context.Context, ep *endpoint, method string, body []byte, oneWay, waitReady bool, cl *call) (outcome, error) {
	cn, out, err := c.connForAttempt(ctx, ep, waitReady)
	if err != nil {
		return out, err
	}
	rt, ok := cn.routes[method]
	if !ok {
		return outcomeLocal, status.Errorf(protocol.CodeUnimplemented, "unknown method %q: not in the server's method table", method)
	}
	if oneWay && !cn.caps.Has(protocol.CapOneWay) {
		return outcomeLocal, status.New(protocol.CodeUnimplemented, "the server does not support one-way calls")
	}

	cl.req = protocol.Request{Service: rt.service, Method: rt.method, OneWay: oneWay, Cancellable: !oneWay && cn.caps.Has(protocol.CapCancel)}
	cl.setBody(cn, body) // compressed per the call's policy (compress_request.go)
	if !cl.setBudget(ctx) {
		return outcomeDeadlineExceeded, context.DeadlineExceeded
	}
	if err := cl.md.attach(cn, &cl.req); err != nil {
		return outcomeLocal, err
	}
	// The id is patched in by send, which assigns it in order.
	frame, err := protocol.AppendRequest(cl.frame[:0], 1, &cl.req)
	cl.req.Body = nil // do not keep the caller's buffer
	if err != nil {
		return outcomeLocal, status.Errorf(protocol.CodeInternal, "encoding the request: %v", err)
	}
	cl.frame = frame
	if cn.frameTooLarge(frame) {
		return outcomeLocal, status.Errorf(protocol.CodeResourceExhausted, "the request (%d bytes) exceeds the server's maximum frame size (%d bytes)", len(frame)-protocol.HeaderSize, cn.peerMaxFrame)
	}
	if err := cn.send(ctx, cl, frame, oneWay); err != nil {
		if e := ctx.Err(); e != nil && errors.Is(err, e) {
			return ctxOutcome(e), e
		}
		return outcomeSendFailure, err
	}
	if oneWay {
		return outcomeSuccess, nil
	}

	select {
	case <-cl.done:
	case <-ctx.Done():
		if cn.abandon(cl) {
			err := ctx.Err()
			reason := protocol.CancelCaller
			if errors.Is(err, context.DeadlineExceeded) {
				reason = protocol.CancelDeadline
			}
			cn.sendCancel(cl, reason)
			return ctxOutcome(err), err
		}
		<-cl.done // the answer is being delivered: take it
	}
	if cl.rcodec != nil {
		return cl.decode(ctx, &c.decodes) // a compressed response (decode_response.go)
	}
	return cl.out, cl.err
}

// connForAttempt is connFor for an attempt, its failure classified: the
// caller's context, a failed dial, or no connection.
func (c *Client) connForAttempt(ctx context.Context, ep *endpoint, waitReady bool) (*conn, outcome, error) {
	cn, err := c.connFor(ctx, ep, waitReady)
	if err == nil {
		return cn, outcomeSuccess, nil
	}
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return nil, ctxOutcome(err), err
	}
	var de *dialError
	if errors.As(err, &de) {
		return nil, outcomeNotConnected, de.st
	}
	return nil, outcomeSendFailure, err
}

// setBudget sends ctx's deadline, if any, as the request's time budget (at
// least a microsecond); it reports false when the deadline has passed.
func (cl *call) setBudget(ctx context.Context) bool {
	dl, ok := ctx.Deadline()
	if !ok {
		return true
	}
	budget := time.Until(dl)
	if budget <= 0 {
		return false
	}
	cl.req.Budget, cl.req.HasBudget = max(budget, time.Microsecond), true
	return true
}
