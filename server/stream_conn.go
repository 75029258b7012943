package server

import (
	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/spi"
)

// The reader's side of streams: Message, End and WindowUpdate frames,
// routed by id on the reader goroutine (docs/streaming.md). Each handler
// returns an error only for a protocol violation, which ends the
// connection.

// errStreamsNotNegotiated is the violation of a stream frame, or a
// Request with Stream, on a connection whose client did not announce
// CapStreaming.
var errStreamsNotNegotiated = &protocol.ProtocolError{Reason: "a stream frame, but streaming was not negotiated (the client did not announce CapStreaming)"}

// streamFor returns the live stream id, or nil; for nil it also returns
// the violation of an id never opened (above the last Request id
// accepted). A known id that is not a live stream (ended, refused, or a
// unary call) is ignored: its frames may have crossed the end.
func (c *conn) streamFor(id uint64) (*Stream, error) {
	c.mu.Lock()
	s := c.streams[id]
	c.mu.Unlock()
	if s == nil && id > c.lastID.Load() {
		return nil, &protocol.ProtocolError{Reason: "a stream frame for an id that was never opened"}
	}
	return s, nil
}

// onMessage handles a client's Message frame.
func (c *conn) onMessage(h protocol.Header, payload []byte) error {
	if !c.streaming {
		return errStreamsNotNegotiated
	}
	if h.Flags&^protocol.MessageFlagsFromClient != 0 {
		return &protocol.ProtocolError{Reason: "a client Message with flags " + h.Flags.String()}
	}
	m := &c.msg
	if err := protocol.ParseMessage(h, payload, c.lim, m); err != nil {
		return err // no metadata is allowed: any error is a violation
	}
	s, err := c.streamFor(h.ID)
	if err != nil {
		return err
	}
	return c.deliver(s, m.Body, m.Compressed, m.OriginalLength, m.EndStream)
}

// deliver charges one client message to the connection's window and, if
// s is live, to its window, and queues a copy for its Receive; s nil or
// ended drops it at once (its bytes go back to the connection window).
// endStream half-closes the stream after it.
func (c *conn) deliver(s *Stream, body []byte, compressed bool, origLen uint32, endStream bool) error {
	n := protocol.MessageCost(len(body), uint64(len(body)))
	if compressed {
		n = protocol.MessageCost(len(body), uint64(origLen))
	}
	if err := c.recvConn.OnMessage(n); err != nil {
		return err
	}
	if s == nil {
		c.dropConnBytes(n)
		return nil
	}
	var codec spi.Codec
	var merr error
	if compressed {
		codec, merr = c.streamCodec(c.msg.CodecID, origLen, len(body))
	}
	return s.push(streamMsg{b: body, n: n, declared: origLen, compressed: compressed, codec: codec, err: merr}, endStream, true)
}

// push queues a copy of a message of n flow-control bytes, already
// charged to the connection's window, and charges it to the stream's; on
// an ended stream it drops it (the bytes go back to the connection's
// window). endStream half-closes the stream after it. charge is false
// for the opening message (admitted as the request's body); a later
// message that arrives before admission is charged to the pre-admission
// budgets, and refuses the stream when it does not fit.
func (s *Stream) push(m streamMsg, endStream, charge bool) error {
	body, n := m.b, m.n
	s.mu.Lock()
	switch {
	case s.ended:
		s.mu.Unlock()
		s.c.dropConnBytes(n)
		return nil
	case s.halfClosed:
		s.mu.Unlock()
		return &protocol.ProtocolError{Reason: "a client Message after its half-close"}
	case s.refused != nil:
		// Refused before it ran: its Error is on its way; this message
		// crossed it.
		s.halfClosed = endStream
		s.mu.Unlock()
		s.c.dropConnBytes(n)
		return nil
	}
	if err := s.recv.OnMessage(n); err != nil {
		s.mu.Unlock()
		return err
	}
	if charge && !s.admitted {
		if f, drop := s.chargeLocked(int64(len(body))); f != nil {
			s.recv.Drop(n)
			total := n + s.refuseLocked(f, drop)
			cancel := s.cl.cancel // s.cl is valid only under s.mu
			s.mu.Unlock()
			s.c.dropConnBytes(total)
			cancel() // ends a Wait in the queue; run answers with f
			return nil
		}
	}
	m.buf = protocol.GetMessageBuffer(body)
	m.b = *m.buf
	s.queue.Push(m)
	s.halfClosed = endStream
	s.mu.Unlock()
	s.signal()
	return nil
}

// signal wakes a Receive waiting for the stream.
func (s *Stream) signal() {
	select {
	case s.ready <- struct{}{}:
	default:
	}
}

// onEnd handles a client's End frame: the half-close without a message.
func (c *conn) onEnd(h protocol.Header, payload []byte) error {
	if !c.streaming {
		return errStreamsNotNegotiated
	}
	if h.Flags&^protocol.EndFlagsFromClient != 0 {
		return &protocol.ProtocolError{Reason: "a client End with flags " + h.Flags.String()}
	}
	if err := protocol.ParseEnd(h, payload, c.lim, &c.end1); err != nil {
		return err
	}
	s, err := c.streamFor(h.ID)
	if err != nil || s == nil {
		return err
	}
	s.mu.Lock()
	defer s.signal()
	defer s.mu.Unlock()
	switch {
	case s.ended:
		return nil
	case s.halfClosed:
		return &protocol.ProtocolError{Reason: "a client End after its half-close"}
	}
	s.halfClosed = true
	return nil
}

// onWindowUpdate handles a client's WindowUpdate: credit for what this
// server sends, on the connection (id 0) or a stream.
func (c *conn) onWindowUpdate(h protocol.Header, payload []byte) error {
	if !c.streaming {
		return errStreamsNotNegotiated
	}
	var u protocol.WindowUpdate
	if err := protocol.ParseWindowUpdate(h, payload, &u); err != nil {
		return err
	}
	if h.ID == 0 {
		return c.sendConn.Update(uint64(u.Returned), uint64(u.Growth))
	}
	s, err := c.streamFor(h.ID)
	if err != nil || s == nil {
		return err
	}
	return s.sendW.Update(uint64(u.Returned), uint64(u.Growth))
}

// writeWindowUpdate returns n received bytes to the client on id (0: the
// connection). The frame must go out: the window already counts n as
// returned.
func (c *conn) writeWindowUpdate(id, n uint64) {
	c.writeWindowUpdateGrowth(id, n, 0)
}

// writeWindowUpdateGrowth returns n bytes and grows the window by growth
// on id; both already counted by the window. What one frame cannot carry
// (a window may owe up to 2·MaxWindow−1) goes in further frames.
func (c *conn) writeWindowUpdateGrowth(id, n, growth uint64) {
	var b [3 * (protocol.HeaderSize + 10)]byte
	if frames := protocol.AppendWindowReturn(b[:0], id, n, growth); len(frames) > 0 {
		_ = c.w.Write(frames)
	}
}

// dropConnBytes returns n bytes of messages dropped unread to the
// connection's window, at once.
func (c *conn) dropConnBytes(n uint64) {
	if r, send := c.recvConn.Drop(n); send {
		c.writeWindowUpdate(0, r)
	}
}
