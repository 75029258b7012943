package client

import (
	"context"
	"errors"
	"io"

	"github.com/sluicerpc/sluice/message"
	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/protocol/status"
)

// Typed streams: the client's side of the three stream shapes of
// docs/streaming.md with typed messages, over the raw *Stream (NewStream),
// as Call is over CallRaw. Each type is named for its call's shape, as the
// handler-side types of package server are (server.ServerStream,
// server.ClientStream, server.BidiStream). Opening, ends, flow control,
// endpoint policies and concurrency are the raw Stream's.

// ServerStream is the client's side of a typed server-streaming call: one
// request, sent by NewServerStream, then any number of responses.
//
// Receive decodes each server message with the response codec into a new
// value the caller owns. A message that does not decode returns Internal,
// as for Call, and ends the stream from this side: a Cancel goes to the
// server (unless it had already ended the stream), the messages not yet
// received are dropped and their bytes returned, every later Receive
// returns the same error, and the endpoint policy is told the attempt was
// cancelled (a codec mismatch says nothing about the endpoint's health).
// Receive is for one goroutine at a time; Header, Trailer and Close for
// any. A stream neither read to its end nor closed holds connection credit
// until its context ends: Close is always safe, more than once.
type ServerStream[Resp any] struct {
	in typedReceiver[Resp]
}

// NewServerStream starts a server-streaming call of fullMethod: req is
// encoded with reqCodec and sent as the stream's opening (and only)
// message, and the server's messages are decoded with respCodec. An
// encoding failure returns InvalidArgument without sending. ctx governs the
// whole stream, and the options apply, as for NewStream.
func NewServerStream[Req, Resp any](ctx context.Context, c *Client, fullMethod string, req *Req, reqCodec message.Codec[Req], respCodec message.Codec[Resp], opts ...CallOption) (*ServerStream[Resp], error) {
	bp := bodyPool.Get().(*[]byte)
	defer putBody(bp)
	body, err := reqCodec.AppendMarshal((*bp)[:0], req)
	if err != nil {
		return nil, encodeError(reqCodec.Name(), err)
	}
	*bp = body
	raw, err := c.NewStream(ctx, fullMethod, StreamServer, opts...)
	if err != nil {
		return nil, err
	}
	if err := raw.Send(body); err != nil {
		_ = raw.Close()
		return nil, err
	}
	return &ServerStream[Resp]{in: typedReceiver[Resp]{raw: raw, codec: respCodec}}, nil
}

// Receive returns the server's next message, decoded into a new Resp;
// io.EOF after the server's End. A message that does not decode returns
// Internal and ends the stream (a Cancel goes to the server).
func (s *ServerStream[Resp]) Receive() (*Resp, error) { return s.in.receive() }

// Header returns the response headers, waiting for the server's first
// frame (see Stream.Header).
func (s *ServerStream[Resp]) Header() (*protocol.Metadata, error) { return s.in.raw.Header() }

// Trailer returns the trailers, once Receive returned an error (see
// Stream.Trailer).
func (s *ServerStream[Resp]) Trailer() *protocol.Metadata { return s.in.raw.Trailer() }

// Close ends the stream if it has not ended and releases what it holds
// (see Stream.Close).
func (s *ServerStream[Resp]) Close() error { return s.in.raw.Close() }

// ClientStream is the client's side of a typed client-streaming call: any
// number of requests, then one response (CloseAndReceive).
//
// Send encodes with the request codec into a buffer the stream reuses (the
// raw Send does not retain its message), so a steady stream allocates
// nothing beyond the codec's own work. A message that does not encode
// returns InvalidArgument, as for Call, and nothing is sent; the stream is
// still usable. Send and CloseAndReceive are for one goroutine; Header,
// Trailer and Close for any. A stream abandoned without CloseAndReceive or
// Close holds its call until its context ends.
type ClientStream[Req, Resp any] struct {
	out       typedSender[Req]
	respCodec message.Codec[Resp]
	received  bool // CloseAndReceive ran
}

// NewClientStream opens a client-streaming call of fullMethod: the messages
// sent are encoded with reqCodec, the response decoded with respCodec. The
// stream is opened before NewClientStream returns, as for NewStream.
func NewClientStream[Req, Resp any](ctx context.Context, c *Client, fullMethod string, reqCodec message.Codec[Req], respCodec message.Codec[Resp], opts ...CallOption) (*ClientStream[Req, Resp], error) {
	raw, err := c.NewStream(ctx, fullMethod, StreamClient, opts...)
	if err != nil {
		return nil, err
	}
	return &ClientStream[Req, Resp]{out: typedSender[Req]{raw: raw, codec: reqCodec}, respCodec: respCodec}, nil
}

// Send encodes m and sends it (see Stream.Send: it blocks while a window
// has no credit, bounded by the stream's context; after the server ended
// the stream it returns io.EOF, and CloseAndReceive tells how). m is not
// retained. A message that does not encode returns InvalidArgument, and
// nothing is sent.
func (s *ClientStream[Req, Resp]) Send(m *Req) error { return s.out.send(m) }

// CloseAndReceive half-closes the stream and waits for the server's
// answer: its one message, decoded into a new Resp, followed by its End.
// It returns the server's error (with its trailers in Trailer) when the
// server failed the call. A server that ends the call with no message, or
// sends more than one, breaks the shape: Internal (a Cancel goes to the
// server in the second case); so does a message that does not decode. The
// stream has ended and released everything when CloseAndReceive returns;
// it may be called once, from the sending goroutine.
func (s *ClientStream[Req, Resp]) CloseAndReceive() (*Resp, error) {
	if s.received {
		return nil, status.New(protocol.CodeFailedPrecondition, "CloseAndReceive called twice")
	}
	s.received = true
	raw := s.out.raw
	defer raw.Close() // after the end it only releases
	if err := raw.CloseSend(); err != nil {
		return nil, err
	}
	b, err := raw.Receive()
	if errors.Is(err, io.EOF) {
		return nil, status.New(protocol.CodeInternal, "the server ended the client-streaming call without a response")
	}
	if err != nil {
		return nil, err
	}
	resp := new(Resp)
	if err := s.respCodec.Unmarshal(b, resp); err != nil {
		e := decodeError(s.respCodec.Name(), err)
		raw.abort(outcomeLocal, e)
		return nil, e
	}
	switch _, err := raw.Receive(); {
	case errors.Is(err, io.EOF):
		return resp, nil
	case err == nil:
		e := status.New(protocol.CodeInternal, "the server sent more than one response on a client-streaming call")
		raw.abort(outcomeLocal, e)
		return nil, e
	default:
		return nil, err
	}
}

// Header returns the response headers, waiting for the server's first
// frame (see Stream.Header).
func (s *ClientStream[Req, Resp]) Header() (*protocol.Metadata, error) { return s.out.raw.Header() }

// Trailer returns the trailers once the stream ended (see Stream.Trailer).
func (s *ClientStream[Req, Resp]) Trailer() *protocol.Metadata { return s.out.raw.Trailer() }

// Close ends the stream if it has not ended and releases what it holds
// (see Stream.Close).
func (s *ClientStream[Req, Resp]) Close() error { return s.out.raw.Close() }

// BidiStream is the client's side of a typed bidirectional stream. Send
// is ClientStream's and Receive is ServerStream's (a message that does not
// decode ends the stream with Internal, after which Send returns that
// error, or io.EOF when the server had already ended the stream). Send and
// CloseSend are for one goroutine at a time, Receive for one (possibly
// another), Header, Trailer and Close for any. As for ServerStream, Close
// (or reading to the end) releases what the stream holds.
type BidiStream[Req, Resp any] struct {
	out typedSender[Req]
	in  typedReceiver[Resp]
}

// NewBidiStream opens a bidirectional stream of fullMethod: the messages
// sent are encoded with reqCodec, those received decoded with respCodec.
// The stream is opened before NewBidiStream returns, as for NewStream.
func NewBidiStream[Req, Resp any](ctx context.Context, c *Client, fullMethod string, reqCodec message.Codec[Req], respCodec message.Codec[Resp], opts ...CallOption) (*BidiStream[Req, Resp], error) {
	raw, err := c.NewStream(ctx, fullMethod, StreamBidi, opts...)
	if err != nil {
		return nil, err
	}
	return &BidiStream[Req, Resp]{out: typedSender[Req]{raw: raw, codec: reqCodec}, in: typedReceiver[Resp]{raw: raw, codec: respCodec}}, nil
}

// Send encodes m and sends it (see ClientStream.Send).
func (s *BidiStream[Req, Resp]) Send(m *Req) error { return s.out.send(m) }

// CloseSend half-closes the stream (see Stream.CloseSend).
func (s *BidiStream[Req, Resp]) CloseSend() error { return s.out.raw.CloseSend() }

// Receive returns the server's next message, decoded into a new Resp;
// io.EOF after the server's End. A message that does not decode returns
// Internal and ends the stream (a Cancel goes to the server).
func (s *BidiStream[Req, Resp]) Receive() (*Resp, error) { return s.in.receive() }

// Header returns the response headers, waiting for the server's first
// frame (see Stream.Header).
func (s *BidiStream[Req, Resp]) Header() (*protocol.Metadata, error) { return s.in.raw.Header() }

// Trailer returns the trailers once Receive returned an error (see
// Stream.Trailer).
func (s *BidiStream[Req, Resp]) Trailer() *protocol.Metadata { return s.in.raw.Trailer() }

// Close ends the stream if it has not ended and releases what it holds
// (see Stream.Close).
func (s *BidiStream[Req, Resp]) Close() error { return s.in.raw.Close() }

// typedSender encodes a typed stream's messages into buf, reused from Send
// to Send (the raw Send does not retain its message). Used by the sending
// goroutine only.
type typedSender[Req any] struct {
	raw   *Stream
	codec message.Codec[Req]
	buf   []byte
}

func (s *typedSender[Req]) send(m *Req) error {
	b, err := s.codec.AppendMarshal(s.buf[:0], m)
	if err != nil {
		return encodeError(s.codec.Name(), err)
	}
	s.buf = b[:0]
	return s.raw.Send(b)
}

// typedReceiver decodes a typed stream's messages. err is its decode
// failure, after which it returns nothing else; used by the receiving
// goroutine only.
type typedReceiver[Resp any] struct {
	raw   *Stream
	codec message.Codec[Resp]
	err   error
}

func (r *typedReceiver[Resp]) receive() (*Resp, error) {
	if r.err != nil {
		return nil, r.err
	}
	b, err := r.raw.Receive()
	if err != nil {
		return nil, err
	}
	m := new(Resp)
	if err := r.codec.Unmarshal(b, m); err != nil {
		r.err = decodeError(r.codec.Name(), err)
		// Ends the stream with the failure and tells the server; when
		// the server had already ended it, drops what is left unread.
		r.raw.abort(outcomeLocal, r.err)
		r.raw.release()
		return nil, r.err
	}
	return m, nil
}

// encodeError is the status of a request message that does not encode
// (as Call's).
func encodeError(codec string, err error) *status.Error {
	return status.Errorf(protocol.CodeInvalidArgument, "encoding a request message with %s: %v", codec, err)
}

// decodeError is the status of a response message that does not decode
// (as Call's).
func decodeError(codec string, err error) *status.Error {
	return status.Errorf(protocol.CodeInternal, "decoding a response message with %s: %v", codec, err)
}
