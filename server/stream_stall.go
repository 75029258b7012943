package server

import (
	"context"
	"fmt"

	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/protocol/flow"
	"github.com/sluicerpc/sluice/protocol/status"
)

// A stream whose client never returns credit would hold its call slot,
// its handler's goroutine and its buffers for as long as the client keeps
// the connection alive. A Send waits for the client's window at most
// Options.StreamStallTimeout: then the stream is stalled for good. Send
// fails with errStreamStalled, the call's context is cancelled (a handler
// that ignores the error still ends), and the stream's last frame is the
// stall's Error, whatever the handler returns. The wait is measured per
// Send: a client that returns credit, however slowly, is never stalled as
// long as each message finds room within the timeout.
//
// While a Send waits, the stream holds no frame: the message is encoded
// after its credit is reserved (send), and the buffers a stream keeps
// between Sends are at most maxKeptSendBuffer each.

// maxKeptSendBuffer bounds the frame and compression buffers a stream
// keeps between Sends (the initial stream window): a stream that sent one
// large message does not keep its size while it waits or idles.
const maxKeptSendBuffer = protocol.InitialStreamWindow

// reserve charges n to the stream's and the connection's send windows,
// waiting for the client's credit while the call lives and at most the
// stall timeout. Its errors are the call context's, errStreamStalled, or
// errStreamEnded for a stream that ended meanwhile.
func (s *Stream) reserve(n uint64) error {
	c := s.c
	if flow.TryReservePair(&s.sendW, &c.sendConn, n) {
		return nil
	}
	ctx := s.ctx
	stall := c.s.o.StreamStallTimeout
	if stall > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(s.ctx, stall) // only when the window is closed
		defer cancel()
	}
	err := flow.ReservePair(ctx, &s.sendW, &c.sendConn, n)
	switch {
	case err == nil:
		return nil
	case s.ctx.Err() != nil:
		return s.ctx.Err()
	case ctx.Err() != nil:
		s.stalled.Store(true)
		c.s.stats.streamStalls.Add(1)
		s.cl.cancel() // the handler ends; end writes the stall's Error
		return errStreamStalled
	}
	return errStreamEnded
}

// giveBack returns n bytes reserved for a message that was not sent.
func (s *Stream) giveBack(n uint64) {
	_ = s.sendW.Update(n, 0)
	_ = s.c.sendConn.Update(n, 0)
}

// errStreamStalled is what Send returns once the stream stalled.
var errStreamStalled = status.New(protocol.CodeResourceExhausted, "server: the client's window stayed closed for the stream stall timeout: the stream is ended")

// stallFrame is the Error that ends a stalled stream.
func (s *Stream) stallFrame() protocol.ErrorFrame {
	return protocol.ErrorFrame{Code: protocol.CodeResourceExhausted, Message: fmt.Sprintf(
		"the stream's window stayed closed for %v (the server's StreamStallTimeout): the stream is ended", s.c.s.o.StreamStallTimeout)}
}

// trimSendBuffers drops the send buffers grown beyond maxKeptSendBuffer.
func (s *Stream) trimSendBuffers() {
	if cap(s.wbuf) > maxKeptSendBuffer {
		s.wbuf = nil
	}
	if cap(s.zbuf) > maxKeptSendBuffer {
		s.zbuf = nil
	}
}
