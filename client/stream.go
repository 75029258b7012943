package client

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"

	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/protocol/flow"
	"github.com/sluicerpc/sluice/protocol/status"
	"github.com/sluicerpc/sluice/spi"
)

// StreamType is the shape of a streaming call (docs/streaming.md).
type StreamType uint8

const (
	// StreamServer: one request message, many responses. Its one Send
	// opens the stream with Stream|HasMessage|EndStream, per the spec.
	StreamServer StreamType = iota + 1
	// StreamClient: many request messages, one response (the server's
	// one Message, then End).
	StreamClient
	// StreamBidi: both sides send messages independently.
	StreamBidi
)

func (t StreamType) String() string {
	switch t {
	case StreamServer:
		return "server"
	case StreamClient:
		return "client"
	case StreamBidi:
		return "bidi"
	}
	return "invalid"
}

// Stream is one streaming call, from NewStream until it ends.
//
// Concurrency: Send and CloseSend may be called from one goroutine at a
// time, Receive from one goroutine at a time (possibly another), and
// Header, Trailer and Close from any goroutine.
//
// Ends. The stream ends exactly once: for the client when the server's End
// (Receive then reports io.EOF) or Error frame arrives (Receive reports
// its status), when ctx ends or Close is called (a Cancel frame goes to
// the server), or when the connection is lost. Its endpoint-policy attempt
// is reported then, once. Messages already received before a server's End
// or Error are still delivered by Receive; after a local end they are
// dropped. The caller must call Close, cancel ctx, or Receive until an
// error: messages left unread hold connection credit until one of these
// (Close after the end releases them and costs nothing else).
type Stream struct {
	c      *Client
	cn     *conn
	kind   StreamType
	method string
	ctx    context.Context
	id     uint64    // set when the opening Request is queued
	start  time.Time // NewStream's time, with metrics (else zero)

	// The request side; used by the sending goroutine only.
	cl     call    // metadata, compression policy and buffers of the call
	opened bool    // the opening Request was queued (guarded by mu too)
	dbuf   []byte  // decoded messages; used by the receiving goroutine only
	last   *[]byte // the pooled buffer of the message Receive returned last; the receiving goroutine's
	// recvErr, the receiving goroutine's: the context's error that
	// interrupted a decode, from then on the end Receive returns (stable,
	// whichever end the stream had meanwhile).
	recvErr error
	co      callOptions

	sendWin flow.SendWindow // our credit on the server's stream window
	recvWin flow.RecvWindow // the server's credit on our stream window

	stopCtx func() bool // unregisters the ctx watcher

	mu         sync.Mutex
	sendClosed bool
	queue      flow.Queue[streamMsg] // received, not taken by Receive
	gotFirst   bool                  // a server frame arrived (headers known)
	header     protocol.Metadata
	trailer    protocol.Metadata
	ending     bool          // finish has begun: the end is claimed
	endErr     error         // non-nil once the end is published: io.EOF after End
	local      bool          // ended by this side (cancel, Close, conn loss)
	released   bool          // queue dropped, ctx watcher stopped
	wake       chan struct{} // capacity 1: a message or the end arrived
	first      chan struct{} // closed at the first server frame or the end
	ended      chan struct{} // closed at the end
	policyHold admitted      // the open attempt's hold on the endpoint policy
	held       bool          // policyHold is to be reported (by finish)
}

// streamMsg is a received message: its own copy of the bytes on the wire
// (memory follows bytes received) in a pooled buffer (buf), decoded in
// Receive when compressed, and its flow-control charge
// (protocol.MessageCost: at least MinMessageCost, so that the windows
// bound how many wait, empty ones included).
type streamMsg struct {
	buf      *[]byte
	data     []byte
	codec    spi.Codec // nil: not compressed
	declared int       // a compressed message's uncompressed length
	cost     uint64
}

// errServerStreamSend is the error of a second Send on a server stream.
var errServerStreamSend = status.New(protocol.CodeFailedPrecondition, "a server-streaming call sends exactly one message")

// Send sends msg, blocking while the stream's or the connection's window
// has no credit or the connection's send buffer is full (a server that
// stops reading), bounded by the stream's context: when it ends first the
// message is not sent and the stream is cancelled. msg is not retained.
// After the server ended the stream Send returns io.EOF (Receive returns
// the stream's outcome); after CloseSend it fails with FailedPrecondition.
//
// On a StreamServer stream the one Send opens the call (the endpoint is
// chosen and dialled then, with the retries of a unary call before the
// Request is queued) and half-closes it.
func (s *Stream) Send(msg []byte) error {
	if s.kind == StreamServer {
		s.mu.Lock()
		opened, end := s.opened, s.endErr
		s.mu.Unlock()
		switch {
		case opened:
			return errServerStreamSend
		case end != nil:
			return end
		}
		return s.c.openStream(s, msg, true)
	}
	s.mu.Lock()
	closed, end := s.sendClosed, s.endErr
	s.mu.Unlock()
	switch {
	case closed:
		return status.New(protocol.CodeFailedPrecondition, "Send after CloseSend")
	case end != nil:
		return s.sendEndErr(end)
	}
	cost := s.encode(msg)
	if s.cn.frameTooLarge(s.cl.frame) {
		return status.Errorf(protocol.CodeResourceExhausted, "the message (%d bytes) exceeds the server's maximum frame size (%d bytes)", len(s.cl.frame)-protocol.HeaderSize, s.cn.peerMaxFrame)
	}
	if err := flow.ReservePair(s.ctx, &s.sendWin, &s.cn.sendWin, cost); err != nil {
		return s.sendFailure(err)
	}
	if err := s.cn.w.WriteContext(s.ctx, s.cl.frame); err != nil {
		if e := ctxErr(s.ctx); e != nil {
			// Not queued: the stream's context ended while the
			// connection did not drain.
			s.returnCredit(cost)
			s.cancel(e)
			return e
		}
		return s.sendEndErr(unavailable("connection to " + s.cn.ep.addr + " failed: message not sent: " + describe(err)))
	}
	return nil
}

// encode compresses msg per the call's policy (as a unary request body,
// compress_request.go), encodes its Message frame into s.cl.frame and
// returns its flow-control charge.
func (s *Stream) encode(msg []byte) uint64 {
	s.cl.zidx = 0 // a new body: nothing of the last one's compression applies
	s.cl.req = protocol.Request{}
	s.cl.setBody(s.cn, msg)
	m := protocol.Message{Body: s.cl.req.Body, Compressed: s.cl.req.Compressed, CodecID: s.cl.req.CodecID, OriginalLength: s.cl.req.OriginalLength}
	s.cl.req.Body = nil
	s.cl.frame, _ = protocol.AppendMessage(s.cl.frame[:0], s.id, &m)
	return protocol.MessageCost(len(m.Body), uint64(len(msg)))
}

// returnCredit gives back a reservation that was not sent.
func (s *Stream) returnCredit(n uint64) {
	if n == 0 {
		return
	}
	_ = s.sendWin.Update(n, 0)
	_ = s.cn.sendWin.Update(n, 0)
}

// sendFailure maps a failed reservation to Send's error.
func (s *Stream) sendFailure(err error) error {
	if errors.Is(err, flow.ErrTooLarge) {
		return status.New(protocol.CodeResourceExhausted, "the message is larger than a window can ever allow")
	}
	if e := ctxErr(s.ctx); e != nil {
		s.cancel(e)
		return e
	}
	<-s.ended // ErrClosed: the stream's or the connection's window closed at the end
	s.mu.Lock()
	end := s.endErr
	s.mu.Unlock()
	return s.sendEndErr(end)
}

// sendEndErr is Send's error once the stream ended with end: io.EOF when
// the server ended it (Receive tells how), the end's error otherwise.
func (s *Stream) sendEndErr(end error) error {
	s.mu.Lock()
	local := s.local
	s.mu.Unlock()
	if !local {
		return io.EOF
	}
	return end
}

// CloseSend half-closes the stream: the client sends nothing more (an End
// frame). It does not wait for the server. Calling it again is a no-op.
func (s *Stream) CloseSend() error {
	s.mu.Lock()
	if s.kind == StreamServer || s.sendClosed {
		opened := s.opened
		s.mu.Unlock()
		if !opened {
			return status.New(protocol.CodeFailedPrecondition, "CloseSend on a server stream before its Send")
		}
		return nil
	}
	s.sendClosed = true
	end := s.endErr
	s.mu.Unlock()
	if end != nil {
		return nil // nothing left to close
	}
	var b [protocol.HeaderSize]byte
	f, _ := protocol.AppendEnd(b[:0], s.id, &protocol.End{})
	if err := s.cn.w.WriteContext(s.ctx, f); err != nil {
		if e := ctxErr(s.ctx); e != nil {
			s.cancel(e) // not queued: the stream's context ended first
			return e
		}
		return unavailable("connection to " + s.cn.ep.addr + " failed: half-close not sent: " + describe(err))
	}
	return nil
}

// Receive returns the next message from the server, valid until the next
// Receive. It blocks until one arrives or the stream ends: io.EOF after
// the server's End, the status error of its Error frame, the context's
// error after a cancel, Canceled after Close, Unavailable after a lost
// connection.
func (s *Stream) Receive() ([]byte, error) {
	protocol.PutMessageBuffer(s.last) // the last message is no longer valid
	s.last = nil
	if s.recvErr != nil {
		s.release() // a no-op until the end is published
		return nil, s.recvErr
	}
	for {
		s.mu.Lock()
		if !s.opened && s.endErr == nil {
			s.mu.Unlock()
			return nil, status.New(protocol.CodeFailedPrecondition, "Receive on a server stream before its Send")
		}
		if s.queue.Len() > 0 {
			m := s.queue.Pop()
			ended := s.endErr != nil
			s.mu.Unlock()
			s.consumed(m.cost, ended)
			if m.codec == nil {
				s.last = m.buf
				return m.data, nil
			}
			out, err := s.decode(&m)
			protocol.PutMessageBuffer(m.buf)
			return out, err
		}
		if err := s.endErr; err != nil {
			s.mu.Unlock()
			s.release()
			return nil, err
		}
		s.mu.Unlock()
		select {
		case <-s.wake:
		case <-s.ended:
		}
	}
}

// consumed returns n bytes taken by the caller to the windows, sending
// WindowUpdates when the batching says so (the stream's only while the
// stream lives).
func (s *Stream) consumed(n uint64, ended bool) {
	if n == 0 {
		return
	}
	if r, send := s.cn.recvWin.Consume(n); send {
		s.cn.sendWindowUpdate(0, r)
	}
	if r, send := s.recvWin.Consume(n); send && !ended {
		s.cn.sendWindowUpdate(s.id, r)
	}
}

// Header returns the response headers: the metadata of the server's first
// frame of the stream, waiting for it (bounded by the stream's context).
// It fails with the stream's error when the stream ended locally before
// any server frame.
func (s *Stream) Header() (*protocol.Metadata, error) {
	s.mu.Lock()
	unopened := !s.opened && s.endErr == nil
	s.mu.Unlock()
	if unopened {
		return nil, status.New(protocol.CodeFailedPrecondition, "Header on a server stream before its Send")
	}
	select {
	case <-s.first:
	case <-s.ctx.Done():
		s.cancel(s.ctx.Err())
		<-s.first // closed when the end is published, whoever ends it
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.gotFirst {
		return nil, s.endErr
	}
	return &s.header, nil
}

// Trailer returns the trailers: the metadata of the server's End or Error.
// It is empty until the stream ended (until Receive returned an error).
func (s *Stream) Trailer() *protocol.Metadata {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.endErr == nil {
		return &protocol.Metadata{}
	}
	return &s.trailer
}

// Close ends the stream if it has not ended (a Cancel frame to the server,
// Canceled for Send and Receive) and releases everything it holds. It is
// safe to call at any time and more than once.
func (s *Stream) Close() error {
	s.cancel(errStreamClosed)
	s.release()
	return nil
}

var errStreamClosed = status.New(protocol.CodeCanceled, "the stream was closed")
