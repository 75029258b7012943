package client

import (
	"context"
	"errors"

	"github.com/sluicerpc/sluice/codecs"
	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/protocol/status"
	"github.com/sluicerpc/sluice/spi"
)

// finish ends the stream with err (io.EOF for the server's End), exactly
// once: it reports whether this call ended it. local says this side ended
// it (cancel, Close, a refused message, the connection's loss): messages
// not yet received by the caller are dropped, their bytes returned to the
// connection window. The stream leaves its connection's table, its send
// window closes (a blocked Send returns), and its endpoint-policy attempt
// is reported with out, all before the end is published (Receive, Send
// and Header see it after the report, as a unary call's caller does). It
// never blocks on the network beyond queueing a WindowUpdate.
func (s *Stream) finish(out outcome, err error, local bool) bool {
	s.mu.Lock()
	if s.ending {
		s.mu.Unlock()
		return false
	}
	s.ending, s.local = true, local
	var dropped uint64
	if local {
		dropped = s.takeQueueLocked()
	}
	cn, held := s.cn, s.held
	s.held = false
	s.mu.Unlock()
	s.observeEnd(err)
	s.sendWin.Close()
	defer s.publish(err)
	if cn == nil {
		return true // never opened: nothing else to release
	}
	cn.removeStream(s)
	cn.dropped(dropped)
	if held {
		if out == outcomeRemoteError && status.Code(err) == protocol.CodeDeadlineExceeded && errors.Is(ctxErr(s.ctx), context.DeadlineExceeded) {
			out = outcomeDeadlineExceeded // as for a unary attempt
		}
		rerr := err
		if out == outcomeSuccess {
			rerr = nil // the server's End: status OK
		}
		s.c.policy.report(s.policyHold, out, rerr, false)
	}
	return true
}

// publish makes the end err visible to the caller's side of the stream.
func (s *Stream) publish(err error) {
	s.mu.Lock()
	s.endErr = err
	close(s.ended)
	if !s.gotFirst {
		close(s.first)
	}
	s.mu.Unlock()
}

// takeQueueLocked empties the queue and returns the bytes it charged.
func (s *Stream) takeQueueLocked() uint64 {
	var n uint64
	s.queue.Drain(func(m *streamMsg) {
		n += m.cost
		protocol.PutMessageBuffer(m.buf)
	})
	return n
}

// cancel ends the stream from this side with err (the context's error, or
// errStreamClosed) and tells the server with a Cancel frame.
func (s *Stream) cancel(err error) {
	s.abort(ctxOutcome(err), err)
}

// abort ends the stream from this side with out and err and, if this
// ended it, sends the server a Cancel frame (when CapCancel was
// negotiated, as for unary calls).
func (s *Stream) abort(out outcome, err error) {
	if !s.finish(out, err, true) {
		return
	}
	s.mu.Lock()
	cn := s.cn
	s.mu.Unlock()
	if cn != nil {
		s.sendCancel(cn, err)
	}
}

// sendCancel sends the server a Cancel frame for s, ended by this side
// with err, when CapCancel was negotiated. It never waits for buffer space
// (see conn.sendCancel).
func (s *Stream) sendCancel(cn *conn, err error) {
	if !cn.caps.Has(protocol.CapCancel) {
		return
	}
	reason := protocol.CancelCaller
	if errors.Is(err, context.DeadlineExceeded) {
		reason = protocol.CancelDeadline
	}
	var b [64]byte
	if f, err := protocol.AppendCancel(b[:0], s.id, reason); err == nil {
		_ = cn.w.WriteNoWait(f)
	}
}

// release, once the stream has ended, drops the messages the caller did
// not take (returning their bytes to the connection window) and stops
// watching the context. Exactly once; a no-op before the end.
func (s *Stream) release() {
	s.mu.Lock()
	if s.released || s.endErr == nil {
		s.mu.Unlock()
		return
	}
	s.released = true
	dropped := s.takeQueueLocked()
	cn, stop := s.cn, s.stopCtx
	s.mu.Unlock()
	if stop != nil {
		stop()
	}
	if cn != nil {
		cn.dropped(dropped)
	}
}

// decode decodes a compressed message into the stream's decode buffer,
// under the caps of the client's compression settings, its declared
// length its exact limit (as a unary response: decode_response.go). A
// message that does not decode ends the stream (the server is told with a
// Cancel). The decode holds its declared length of the client's decode
// budget while it runs; waiting for it ends with the stream's context,
// which then ends the stream as a cancellation during the decode does.
func (s *Stream) decode(m *streamMsg) ([]byte, error) {
	if e := s.c.decodes.acquire(s.ctx, int64(m.declared)); e != nil {
		s.cancel(s.ctx.Err())
		s.recvErr = e
		s.release()
		return nil, e
	}
	out, err := codecs.Decompress(s.ctx, m.codec, s.dbuf[:0], m.data, m.declared)
	s.c.decodes.release(int64(m.declared))
	if err == nil && len(out) == m.declared {
		s.dbuf = out
		return out, nil
	}
	name := m.codec.Name()
	var e error
	switch {
	case err == nil:
		e = &bodyError{st: status.Errorf(protocol.CodeDataLoss, "the server's %s message decodes to %d bytes, not the %d it declared", name, len(out), m.declared), cause: spi.ErrCorrupt}
	case s.ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)):
		// The caller's cancellation ends the stream for the caller, even
		// one the server had ended already (its messages still queued):
		// every later Receive returns e too, and release drops the queue.
		e = s.ctx.Err()
		s.cancel(e)
		s.recvErr = e
		s.release()
		return nil, e
	case errors.Is(err, spi.ErrDecodedTooLarge):
		e = &bodyError{st: status.Errorf(protocol.CodeDataLoss, "the server's %s message decodes to more than the %d bytes it declared: refused", name, m.declared), cause: err}
	case errors.Is(err, spi.ErrCorrupt):
		e = &bodyError{st: status.Errorf(protocol.CodeDataLoss, "the server's %s message does not decode: %v", name, err), cause: err}
	default:
		e = &bodyError{st: status.Errorf(protocol.CodeInternal, "decoding the server's %s message failed: %v", name, err), cause: err}
	}
	s.abort(outcomeRemoteError, e)
	return nil, e
}
