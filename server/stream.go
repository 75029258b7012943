package server

import (
	"context"
	"io"
	"sync"
	"sync/atomic"

	"github.com/sluicerpc/sluice/kernel/governor"
	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/protocol/flow"
	"github.com/sluicerpc/sluice/protocol/status"
	"github.com/sluicerpc/sluice/spi"
)

// Stream is the server's side of one streaming call (docs/streaming.md),
// handed to the handler of a stream method. Its methods take no context:
// they are bounded by the call's, the one the handler gets (Cancel,
// deadline, connection close, Stop).
//
// Ownership: the Stream belongs to its handler while the handler runs. At
// most one goroutine receives and one sends at a time. Once the handler
// returns the stream has ended: Receive and Send fail with an error and
// touch nothing of the call.
//
// Memory: the messages the client sent and the handler has not received
// yet are held, in arrival order, in the stream's queue; the stream's
// receive window bounds them (less than the window plus one message),
// the connection's window bounds all streams of a connection together.
type Stream struct {
	c    *conn
	cl   *call // valid until the stream ends (guarded by sendMu for sends)
	id   uint64
	kind streamKind
	ctx  context.Context // the call's

	recv  flow.RecvWindow // what the client sent on this stream
	sendW flow.SendWindow // what this server may send on it

	mu         sync.Mutex
	queue      flow.Queue[streamMsg] // received, not yet taken by Receive
	halfClosed bool                  // the client sends nothing more
	ended      bool                  // the stream ended: the queue was dropped
	// Before admission (docs/streaming.md): until the handler starts
	// (admitted), messages after the opening one are charged to pre, the
	// governor's pre-admission stream bytes, and to the queued request's
	// MaxQueuedBytes; over either the stream is refused (refused: its
	// Error, written by the call's goroutine) and its queue dropped.
	admitted bool
	refused  *protocol.ErrorFrame
	refusedD dropReason
	pre      governor.Holding
	ready    chan struct{} // signalled (cap 1) when the queue grows or the client half-closes
	done     chan struct{} // closed when the stream ends

	// Receive's decoding (stream_decode.go): dec holds the decoded bytes
	// of the message returned last and, while decoding, a decode credit;
	// decoded is the buffer, reused.
	dec     governor.Holding
	decoded []byte
	// last is the pooled buffer of the uncompressed message Receive
	// returned last, given back by the next Receive or once the handler
	// returned (only the handler's goroutine touches it).
	last *[]byte

	sendMu    sync.Mutex  // serializes the frames this server writes for the stream
	stalled   atomic.Bool // a Send waited the stall timeout (stream_stall.go)
	sentFirst bool        // a Message went out: the response headers are sent
	sendEnded bool        // End or Error went out
	wbuf      []byte      // the frame being written, reused
	zbuf      []byte      // a compressed message body, reused (stream_compress.go)
}

// streamMsg is one received message: its owned bytes (as received: a
// compressed message in compressed form), in a pooled buffer (buf; nil
// for none), and its flow-control charge (protocol.MessageCost).
type streamMsg struct {
	buf        *[]byte
	b          []byte
	n          uint64
	declared   uint32 // a compressed message's uncompressed length
	compressed bool
	codec      spi.Codec // a compressed message's, checked on the reader
	err        error     // what Receive returns for it: its envelope failed the check
}

// errStreamEnded is what Receive and Send return on a stream that ended.
var errStreamEnded = status.Errorf(protocol.CodeFailedPrecondition, "server: the stream has ended")

// errMessageTooLarge is what Send returns for a message whose frame
// exceeds the client's maximum frame size; nothing was sent or charged.
var errMessageTooLarge = status.Errorf(protocol.CodeResourceExhausted, "server: the message exceeds the client's maximum frame size")

func newStream(c *conn, cl *call, kind streamKind) *Stream {
	s := &Stream{c: c, cl: cl, id: cl.id, kind: kind, ctx: cl.ctx, ready: make(chan struct{}, 1), done: make(chan struct{})}
	s.pre.SetShare(c.share)
	s.dec.SetShare(c.share)
	s.recv.Init(protocol.InitialStreamWindow, protocol.MaxWindow)
	s.sendW.Init(protocol.InitialStreamWindow, protocol.MaxWindow)
	return s
}

// Receive returns the client's next message, valid until the next
// Receive; io.EOF once the client half-closed and every message was
// received. It blocks until a message arrives or the call's context ends
// (then it returns the context's error). Taking a message returns its
// credit to the client (WindowUpdate frames, batched).
func (s *Stream) Receive() ([]byte, error) {
	s.dropLast() // the last message is no longer valid
	for {
		s.mu.Lock()
		switch {
		case s.ended:
			s.mu.Unlock()
			return nil, errStreamEnded
		case s.queue.Len() > 0:
			m := s.queue.Pop()
			s.mu.Unlock()
			s.credit(m.n)
			if m.compressed {
				out, err := s.decode(&m)
				protocol.PutMessageBuffer(m.buf)
				return out, err
			}
			s.last = m.buf
			return m.b, nil
		case s.halfClosed:
			s.mu.Unlock()
			return nil, io.EOF
		}
		s.mu.Unlock()
		select {
		case <-s.ready:
		case <-s.done:
		case <-s.ctx.Done():
			return nil, s.ctx.Err()
		}
	}
}

// dropLast gives back what the message Receive returned last holds: its
// buffer and, for a compressed one, its decoded bytes' budget.
func (s *Stream) dropLast() {
	s.dec.Give(governor.PartDecoded, s.dec.Held(governor.PartDecoded))
	protocol.PutMessageBuffer(s.last)
	s.last = nil
}

// credit returns a taken message's bytes to the stream's and the
// connection's windows, writing the WindowUpdates the windows ask for.
func (s *Stream) credit(n uint64) {
	if r, send := s.recv.Consume(n); send {
		s.c.writeWindowUpdate(s.id, r)
	}
	if r, send := s.c.recvConn.Consume(n); send {
		s.c.writeWindowUpdate(0, r)
	}
}

// Send sends msg to the client, blocking while the stream's or the
// connection's send window is closed (bounded by the call's context).
// The response metadata added before the first Send goes with it as the
// response headers; what is added afterwards becomes the trailers. It
// fails once the stream ended, and on a client-streaming call (whose one
// response is the handler's return value).
func (s *Stream) Send(msg []byte) error {
	if s.kind == kindClientStream {
		return status.Errorf(protocol.CodeInternal, "server: Send on a client-streaming call: its response is the handler's return value")
	}
	return s.send(msg)
}

// send writes msg as one Message frame: compressed when the method's
// response policy finds it worth it (stream_compress.go), the response
// headers on the first, charged protocol.MessageCost(its wire length, its
// uncompressed length) to the stream's and the connection's send windows.
// A message whose encoded frame exceeds the client's maximum frame size
// fails before it is charged.
func (s *Stream) send(msg []byte) error {
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	if s.sendEnded {
		return errStreamEnded
	}
	c := s.c
	var m protocol.Message
	if !s.sentFirst {
		m.Metadata = s.cl.md.resp
	}
	compressed := s.compress(&m, msg)
	// Body and metadata are a lower bound of the payload: a message over
	// it is not copied into the frame buffer at all.
	if uint64(len(m.Body))+uint64(m.Metadata.EncodedLen()) > uint64(c.peerMax) {
		return errMessageTooLarge
	}
	// Credit first, then the frame: a Send waiting for the client's
	// window holds no encoded copy of its message (stream_stall.go).
	cost := protocol.MessageCost(len(m.Body), uint64(len(msg)))
	if err := s.reserve(cost); err != nil {
		return err
	}
	frame, err := protocol.AppendMessage(s.wbuf[:0], s.id, &m)
	if err != nil {
		s.giveBack(cost)
		return status.Errorf(protocol.CodeInternal, "server: encoding a message: %v", err)
	}
	s.wbuf = frame
	if uint64(len(frame)-protocol.HeaderSize) > uint64(c.peerMax) {
		s.giveBack(cost)
		return errMessageTooLarge
	}
	if compressed {
		c.s.stats.compressedStreamMessages.Add(1)
	}
	if !s.sentFirst {
		s.sentFirst = true
		s.cl.md.resp.Reset() // from now on, the trailers
	}
	err = c.w.Write(frame)
	s.trimSendBuffers()
	return err
}

// end writes the stream's last frame for the handler's result: End with
// the trailers (the headers too when nothing was sent) on nil, an Error
// otherwise. It runs once, on the call's goroutine, before release. A Send
// still blocked on the window (a goroutine the handler left behind) fails
// first: the send window is closed before the last frame is written.
func (s *Stream) end(err error) {
	s.sendW.Close()
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	if s.sendEnded {
		return
	}
	s.sendEnded = true
	// The stream ends for the reader before its last frame goes out: a
	// client frame that crossed the End or Error finds no live stream
	// and is ignored (docs/streaming.md), instead of meeting a
	// half-closed one as a violation. The bytes of messages the handler
	// left unread go back after it.
	if n := s.endRecv(); n > 0 {
		defer s.c.dropConnBytes(n)
	}
	cl, c := s.cl, s.c
	if err == nil && s.ctx.Err() != nil {
		err = s.ctx.Err()
	}
	if s.stalled.Load() {
		f := s.stallFrame() // whatever the handler made of it
		cl.withResponseMetadata(&f)
		c.writeError(s.id, &f)
		return
	}
	if err != nil {
		f := cl.handlerErrorFrame(err)
		c.writeError(s.id, &f)
		return
	}
	e := protocol.End{Metadata: cl.md.resp}
	if uint64(e.Metadata.EncodedLen()) > uint64(c.peerMax) {
		e.Metadata = protocol.Metadata{}
	}
	frame, ferr := protocol.AppendEnd(s.wbuf[:0], s.id, &e)
	if ferr != nil {
		return
	}
	s.wbuf = frame
	_ = c.w.Write(frame)
}

// release ends the stream for the runtime, exactly once, whatever ended
// it (the handler's return, a refusal before it ran, Cancel, deadline,
// connection close, Stop, a panic): later frames for its id are ignored,
// the send window is closed (a blocked Send returns), and the messages
// still queued are dropped, their bytes returned to the connection's
// window at once (a WindowUpdate on id 0).
func (s *Stream) release() {
	s.sendMu.Lock()
	s.sendEnded = true
	s.sendMu.Unlock()
	if n := s.endRecv(); n > 0 {
		s.c.dropConnBytes(n)
	}
}

// endRecv is release's receiving side, exactly once: the stream leaves
// the connection's table, its queue is dropped and its budgets given
// back. It returns the dropped messages' connection bytes, for the
// caller to give back (dropConnBytes) once it wrote what must go first.
// It takes s.mu and c.mu, never sendMu (end calls it holding it).
func (s *Stream) endRecv() uint64 {
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		return 0
	}
	s.ended = true
	var total uint64
	s.queue.Drain(func(m *streamMsg) {
		s.recv.Drop(m.n)
		total += m.n
		protocol.PutMessageBuffer(m.buf)
	})
	s.pre.Release()
	s.dec.Release()
	s.mu.Unlock()
	close(s.done)
	s.sendW.Close()
	s.c.mu.Lock()
	if s.c.streams[s.id] == s {
		delete(s.c.streams, s.id)
		if len(s.c.streams) == 0 {
			s.c.rd.SetLargeReadAhead(false)
		}
	}
	s.c.mu.Unlock()
	return total
}
