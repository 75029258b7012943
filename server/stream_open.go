package server

import (
	"github.com/sluicerpc/sluice/protocol"
)

// openingBytes is the flow-control charge of a stream Request's first
// message (protocol.MessageCost), 0 without HasMessage.
func openingBytes(req *protocol.Request) uint64 {
	switch {
	case !req.HasMessage:
		return 0
	case req.Compressed:
		return protocol.MessageCost(len(req.Body), uint64(req.OriginalLength))
	}
	return protocol.MessageCost(len(req.Body), uint64(len(req.Body)))
}

// chargeOpening charges a stream Request's first message to the
// connection's receive window (a violation without credit) and returns
// its charge.
func (c *conn) chargeOpening(req *protocol.Request) (uint64, error) {
	n := openingBytes(req)
	return n, c.recvConn.OnMessage(n)
}

// refusedStreamOpening gives back the first message of a stream Request
// refused before the stream checks (its metadata over the limits): it
// counted against the connection's window. Without CapStreaming the
// Request is the violation it is.
func (c *conn) refusedStreamOpening(req *protocol.Request) error {
	if !req.Stream {
		return nil
	}
	if !c.streaming {
		return errStreamsNotNegotiated
	}
	n, err := c.chargeOpening(req)
	if err == nil && n > 0 {
		c.dropConnBytes(n)
	}
	return err
}

// shapeRefusal answers a Request whose Stream flag does not match its
// method's kind: Unimplemented, the method does not exist in the shape it
// was called in.
func shapeRefusal(m *method, stream bool) protocol.ErrorFrame {
	msg := m.full + " is a " + m.kind.String() + " method, called as a unary call"
	if stream {
		msg = m.full + " is a unary method, called as a stream"
	}
	return protocol.ErrorFrame{Code: protocol.CodeUnimplemented, Message: msg}
}

// streamOpeningRefusal checks a stream Request against its method's kind:
// a server-streaming call is one frame (HasMessage and EndStream); a
// its compressed first message was checked as a request's body is.
func streamOpeningRefusal(m *method, req *protocol.Request) *protocol.ErrorFrame {
	switch {
	case m.kind == kindServerStream && !(req.HasMessage && req.EndStream):
		return &protocol.ErrorFrame{Code: protocol.CodeInvalidArgument, Message: m.full + " is server-streaming: its Request carries the one message and the half-close (HasMessage, EndStream)"}
	}
	return nil
}

// openStream makes the call, whose Request opened a stream, a stream: it
// is registered for its frames and Cancel, and its first message (the
// Request's body, in the call's own copy) is queued.
func (cl *call) openStream() error {
	c := cl.c
	s := newStream(c, cl, cl.m.kind)
	cl.st = s
	c.mu.Lock()
	c.calls[cl.id] = cl
	c.streams[cl.id] = s
	if len(c.streams) == 1 {
		c.rd.SetLargeReadAhead(true) // while a stream lives (protocol.Reader)
	}
	c.mu.Unlock()
	if cl.req.HasMessage {
		m := streamMsg{b: cl.req.Body, n: openingBytes(&cl.req), declared: cl.req.OriginalLength, compressed: cl.req.Compressed, codec: cl.codec}
		return s.push(m, cl.req.EndStream, false)
	}
	if cl.req.EndStream {
		s.mu.Lock()
		s.halfClosed = true
		s.mu.Unlock()
	}
	return nil
}

// invokeStream runs a stream handler, turning a panic into an Internal
// error.
func (cl *call) invokeStream() (err error) {
	defer func() {
		if r := recover(); r != nil {
			cl.c.s.stats.panics.Add(1)
			err = &panicError{panicFrame(r)}
		}
	}()
	return cl.m.stream(cl.ctx, cl.st)
}
