package client

import (
	"context"
	"errors"
	"time"

	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/protocol/flow"
	"github.com/sluicerpc/sluice/protocol/status"
)

// NewStream starts a streaming call of fullMethod ("service/method") of the
// given type (docs/streaming.md). ctx governs the whole stream: its
// deadline is the stream's budget, and its end cancels the stream (a
// Cancel frame). Call options apply as for a unary call (metadata,
// compression, attempts, readiness).
//
// A StreamBidi or StreamClient stream is opened here: the endpoint is
// chosen, dialled (with the retries of a unary call) and its opening
// Request (without a message) is queued before NewStream returns. A
// StreamServer stream is opened by its one Send, which carries the
// request message. A stream is never retried once its opening Request was
// queued: after that its failures are the caller's to handle.
//
// A stream on a server that did not announce CapStreaming fails with
// Unimplemented before anything is sent.
func (c *Client) NewStream(ctx context.Context, fullMethod string, kind StreamType, opts ...CallOption) (*Stream, error) {
	if kind < StreamServer || kind > StreamBidi {
		return nil, status.Errorf(protocol.CodeInvalidArgument, "NewStream: invalid stream type %d", kind)
	}
	co := callOptions{maxAttempts: c.cfg.MaxAttempts}
	if _, ok := c.cfg.idempotent[fullMethod]; ok {
		co.idempotent = true
	}
	for _, o := range opts {
		co = o.apply(co)
	}
	s := &Stream{
		c: c, kind: kind, method: fullMethod, ctx: ctx, co: co, start: c.metrics.now(),
		wake:  make(chan struct{}, 1),
		first: make(chan struct{}),
		ended: make(chan struct{}),
	}
	s.sendWin.Init(protocol.InitialStreamWindow, protocol.MaxWindow)
	s.recvWin.Init(protocol.InitialStreamWindow, protocol.MaxWindow)
	if err := s.cl.md.prepare(&s.co); err != nil {
		return nil, err
	}
	if err := s.cl.preparePolicy(c.cfg.comp, fullMethod, &s.co); err != nil {
		return nil, err
	}
	if kind != StreamServer {
		if err := c.openStream(s, nil, false); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// openStream runs the attempts of opening s until its Request is queued.
// withMsg says the Request carries msg, the first (for StreamServer, the
// only) message. On failure the stream has ended with the error.
func (c *Client) openStream(s *Stream, msg []byte, withMsg bool) error {
	err := c.attempts(s.ctx, &s.co, func(ep *endpoint) (outcome, error) {
		return c.streamAttempt(s, ep, msg, withMsg)
	}, streamRetry)
	if err != nil {
		s.finish(outcomeLocal, err, true)
	}
	return err
}

// streamRetry: an opening that was never queued (the dial failed, the
// connection was closing) may go elsewhere, as may one the endpoint
// policy refused with a hint; nothing else is retried.
func streamRetry(out outcome, err error, idempotent bool) (bool, time.Duration) {
	switch out {
	case outcomeSendFailure, outcomeNotConnected, outcomePolicyRejected:
		return shouldRetry(out, err, idempotent)
	}
	return false, 0
}

// streamAttempt is one attempt at opening s on ep, admitted by the
// endpoint policy current when it starts. An attempt that opened the
// stream keeps its hold: the stream reports it once, at its end (finish);
// a failed one is reported here.
func (c *Client) streamAttempt(s *Stream, ep *endpoint, msg []byte, withMsg bool) (outcome, error) {
	a, held, err := c.admit(ep, s.method)
	if err != nil {
		return outcomePolicyRejected, err
	}
	s.mu.Lock()
	s.policyHold, s.held = a, held
	s.mu.Unlock()
	out, err := c.streamAttemptOnce(s, ep, msg, withMsg)
	if out != outcomeSuccess {
		s.mu.Lock()
		held := s.held // false if a Close meanwhile reported it
		s.held = false
		s.mu.Unlock()
		if held {
			c.policy.report(a, out, err, false)
		}
	}
	return out, err
}

// streamAttemptOnce builds the opening Request of s for ep's connection,
// charges its message to the windows, and queues it.
func (c *Client) streamAttemptOnce(s *Stream, ep *endpoint, msg []byte, withMsg bool) (outcome, error) {
	ctx := s.ctx
	cn, out, err := c.connForAttempt(ctx, ep, s.co.waitForReady)
	if err != nil {
		return out, err
	}
	rt, ok := cn.routes[s.method]
	if !ok {
		return outcomeLocal, status.Errorf(protocol.CodeUnimplemented, "unknown method %q: not in the server's method table", s.method)
	}
	if !cn.streaming {
		return outcomeLocal, status.New(protocol.CodeUnimplemented, "the server does not support streaming")
	}
	cl := &s.cl
	cl.req = protocol.Request{
		Service: rt.service, Method: rt.method, Cancellable: cn.caps.Has(protocol.CapCancel),
		Stream: true, HasMessage: withMsg, EndStream: s.kind == StreamServer,
	}
	if withMsg {
		cl.zidx = 0
		cl.setBody(cn, msg)
	}
	if !cl.setBudget(ctx) {
		return outcomeDeadlineExceeded, context.DeadlineExceeded
	}
	if err := cl.md.attach(cn, &cl.req); err != nil {
		return outcomeLocal, err
	}
	frame, err := protocol.AppendRequest(cl.frame[:0], 1, &cl.req)
	var n uint64 // the opening message counts against both windows like any message
	if withMsg {
		n = protocol.MessageCost(len(cl.req.Body), uint64(len(msg)))
	}
	cl.req.Body = nil
	if err != nil {
		return outcomeLocal, status.Errorf(protocol.CodeInternal, "encoding the request: %v", err)
	}
	cl.frame = frame
	if cn.frameTooLarge(frame) {
		return outcomeLocal, status.Errorf(protocol.CodeResourceExhausted, "the request (%d bytes) exceeds the server's maximum frame size (%d bytes)", len(frame)-protocol.HeaderSize, cn.peerMaxFrame)
	}
	if err := flow.ReservePair(ctx, &s.sendWin, &cn.sendWin, n); err != nil {
		if e := ctxErr(ctx); e != nil {
			return ctxOutcome(e), e
		}
		return outcomeSendFailure, errNotSent
	}
	// Opened before the Request is queued: the reader may end the stream
	// at once.
	s.mu.Lock()
	s.cn, s.opened, s.sendClosed = cn, true, s.kind == StreamServer
	s.mu.Unlock()
	if err := cn.sendStream(ctx, s, frame); err != nil {
		s.mu.Lock()
		s.cn, s.opened, s.sendClosed = nil, false, false
		s.mu.Unlock()
		_ = s.sendWin.Update(n, 0)
		_ = cn.sendWin.Update(n, 0) // (a no-op error on a closed connection)
		if e := ctx.Err(); e != nil && errors.Is(err, e) {
			return ctxOutcome(e), e
		}
		return outcomeSendFailure, err
	}
	if grow := uint64(c.cfg.StreamWindow) - protocol.InitialStreamWindow; grow > 0 {
		// After the Request: a WindowUpdate before it would name a stream
		// the server never saw opened. (For a stream that has ended
		// meanwhile the server ignores it.)
		if r, g, err := s.recvWin.Grow(grow); err == nil {
			cn.sendWindowUpdateGrowth(s.id, r, g)
		}
	}
	s.mu.Lock()
	// Ended already: by this side (closed), or by the server, whose End
	// or Error the reader may have handled before this line; that stream
	// is opened and its outcome is Receive's.
	closed := s.ending && s.local
	if !s.ending {
		s.stopCtx = context.AfterFunc(ctx, func() { s.cancel(ctx.Err()) })
	}
	s.mu.Unlock()
	if closed {
		end := errStreamClosed
		// Closed while opening (Close may run during a server stream's
		// Send): finish ran before the stream was in the table.
		cn.removeStream(s)
		s.sendCancel(cn, end)
		return outcomeCanceled, end
	}
	return outcomeSuccess, nil
}
