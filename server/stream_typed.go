package server

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/sluicerpc/sluice/message"
	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/protocol/status"
)

// Typed streams: the three stream shapes of docs/streaming.md with typed
// messages, over the raw *Stream, registered with the package-level
// functions HandleServerStream, HandleClientStream and HandleBidiStream
// (as the typed unary Handle is; the Mux methods of the same names
// register raw handlers). Each type is named for its call's shape; the
// client's side has types of the same names in package client.

// ServerStream is the server's side of a typed server-streaming call: the
// handler gets the client's one request, decoded, sends any number of
// responses and returns (nil: the stream ends with status OK).
//
// Send encodes with the method's response codec into a buffer the stream
// reuses (the raw Stream.Send copies the message out before it returns),
// so a steady stream allocates nothing beyond the codec's own work. A
// message that does not encode is the server's fault: Send returns
// Internal, sends nothing, and the stream is still usable. Response
// headers and trailers are set with AddResponseMetadata, as for a raw
// stream: before the first message, the headers; after it, the trailers.
// Send is for one goroutine at a time and fails once the handler returned.
type ServerStream[Resp any] struct {
	out sender[Resp]
}

// Send encodes m and sends it, blocking while the stream's or the
// connection's window is closed (bounded by the call's context), as the
// raw Stream.Send does. m is not retained. A message that does not encode
// returns Internal, and nothing is sent.
func (s *ServerStream[Resp]) Send(m *Resp) error { return s.out.send(m) }

// ClientStream is the server's side of a typed client-streaming call: the
// handler receives the client's messages until io.EOF and returns the one
// response.
//
// Receive decodes each message with the method's request codec into a new
// value the handler owns (it may keep it past the next Receive and the
// call). A message that does not decode fails the call with
// InvalidArgument, strictly: that Receive and every later one return the
// same error, and the stream ends with it whatever the handler returns (a
// response included). A handler should return the error it got; one that
// swallows it cannot make the call succeed. Receive is for one goroutine
// at a time and fails once the handler returned.
type ClientStream[Req any] struct {
	in     receiver[Req]
	failed atomic.Pointer[status.Error]
}

// Receive returns the client's next message, decoded into a new Req;
// io.EOF once the client half-closed and every message was received. It
// blocks as the raw Stream.Receive does, and returns its errors (the
// context's, io.EOF) as they are. A message that does not decode returns
// InvalidArgument and fails the call.
func (s *ClientStream[Req]) Receive() (*Req, error) { return s.in.receive() }

// BidiStream is the server's side of a typed bidirectional stream, with
// requests of type Req and responses of type Resp received and sent in any
// order (one goroutine receiving and one sending at a time).
//
// Receive is ClientStream's and Send is ServerStream's, with one rule
// joining them: once a client message failed to decode, the call has
// failed with InvalidArgument, and Send returns that error too and sends
// nothing; the stream ends with it whatever the handler returns.
type BidiStream[Req, Resp any] struct {
	in     receiver[Req]
	out    sender[Resp]
	failed atomic.Pointer[status.Error]
}

// Receive returns the client's next message, decoded into a new Req;
// io.EOF once the client half-closed. A message that does not decode
// returns InvalidArgument and fails the call.
func (s *BidiStream[Req, Resp]) Receive() (*Req, error) { return s.in.receive() }

// Send encodes m and sends it (see ServerStream.Send). After a client
// message failed to decode it returns that failure and sends nothing.
func (s *BidiStream[Req, Resp]) Send(m *Resp) error { return s.out.send(m) }

// HandleServerStream registers a typed server-streaming handler for
// service/method (the typed form of Mux.HandleServerStream): the client's
// one message is decoded with reqCodec (one that does not decode ends the
// call with InvalidArgument without calling h), and the messages h sends
// are encoded with respCodec. h's return ends the stream as a raw
// handler's does.
func HandleServerStream[Req, Resp any](m *Mux, service, method string, reqCodec message.Codec[Req], respCodec message.Codec[Resp], h func(ctx context.Context, req *Req, s *ServerStream[Resp]) error) {
	if h == nil || reqCodec == nil || respCodec == nil {
		panic(fmt.Sprintf("server: nil handler or codec for %s/%s", service, method))
	}
	m.HandleServerStream(service, method, func(ctx context.Context, body []byte, raw *Stream) error {
		req := new(Req)
		if err := reqCodec.Unmarshal(body, req); err != nil {
			return decodeError(reqCodec.Name(), err)
		}
		return h(ctx, req, &ServerStream[Resp]{out: sender[Resp]{raw: raw, codec: respCodec}})
	})
}

// HandleClientStream registers a typed client-streaming handler for
// service/method (the typed form of Mux.HandleClientStream): the client's
// messages are decoded with reqCodec, and h's response is encoded with
// respCodec (one that does not encode ends the call with Internal). After
// a client message failed to decode, the call ends with InvalidArgument
// whatever h returns.
func HandleClientStream[Req, Resp any](m *Mux, service, method string, reqCodec message.Codec[Req], respCodec message.Codec[Resp], h func(ctx context.Context, s *ClientStream[Req]) (*Resp, error)) {
	if h == nil || reqCodec == nil || respCodec == nil {
		panic(fmt.Sprintf("server: nil handler or codec for %s/%s", service, method))
	}
	m.HandleClientStream(service, method, func(ctx context.Context, raw *Stream) ([]byte, error) {
		s := &ClientStream[Req]{}
		s.in = receiver[Req]{raw: raw, codec: reqCodec, failed: &s.failed}
		resp, err := h(ctx, s)
		if f := s.failed.Load(); f != nil {
			return nil, f
		}
		if err != nil {
			return nil, err
		}
		// The raw runtime copies the returned body into its frame.
		body, err := respCodec.AppendMarshal(nil, resp)
		if err != nil {
			return nil, encodeError(respCodec.Name(), err)
		}
		return body, nil
	})
}

// HandleBidiStream registers a typed bidirectional-streaming handler for
// service/method (the typed form of Mux.HandleBidiStream): the client's
// messages are decoded with reqCodec, the messages h sends encoded with
// respCodec. After a client message failed to decode, the call ends with
// InvalidArgument whatever h returns.
func HandleBidiStream[Req, Resp any](m *Mux, service, method string, reqCodec message.Codec[Req], respCodec message.Codec[Resp], h func(ctx context.Context, s *BidiStream[Req, Resp]) error) {
	if h == nil || reqCodec == nil || respCodec == nil {
		panic(fmt.Sprintf("server: nil handler or codec for %s/%s", service, method))
	}
	m.HandleBidiStream(service, method, func(ctx context.Context, raw *Stream) error {
		s := &BidiStream[Req, Resp]{}
		s.in = receiver[Req]{raw: raw, codec: reqCodec, failed: &s.failed}
		s.out = sender[Resp]{raw: raw, codec: respCodec, failed: &s.failed}
		err := h(ctx, s)
		if f := s.failed.Load(); f != nil {
			return f
		}
		return err
	})
}

// receiver decodes the client's messages of a typed stream. failed is the
// call's decode failure, shared with its sender; set once.
type receiver[Req any] struct {
	raw    *Stream
	codec  message.Codec[Req]
	failed *atomic.Pointer[status.Error]
}

func (r *receiver[Req]) receive() (*Req, error) {
	if f := r.failed.Load(); f != nil {
		return nil, f
	}
	b, err := r.raw.Receive()
	if err != nil {
		return nil, err
	}
	m := new(Req)
	if err := r.codec.Unmarshal(b, m); err != nil {
		f := decodeError(r.codec.Name(), err)
		r.failed.CompareAndSwap(nil, f)
		return nil, r.failed.Load()
	}
	return m, nil
}

// sender encodes the messages of a typed stream into buf, reused from
// Send to Send: the raw Send copies the message into its frame before it
// returns. failed is the call's decode failure (nil for a server stream,
// which receives nothing after its request).
type sender[Resp any] struct {
	raw    *Stream
	codec  message.Codec[Resp]
	failed *atomic.Pointer[status.Error]
	buf    []byte
}

func (s *sender[Resp]) send(m *Resp) error {
	if s.failed != nil {
		if f := s.failed.Load(); f != nil {
			return f
		}
	}
	b, err := s.codec.AppendMarshal(s.buf[:0], m)
	if err != nil {
		return encodeError(s.codec.Name(), err)
	}
	s.buf = b[:0]
	return s.raw.Send(b)
}

// decodeError is the status of a client message that does not decode.
func decodeError(codec string, err error) *status.Error {
	return status.Errorf(protocol.CodeInvalidArgument, "server: decoding a request message with %s: %v", codec, err)
}

// encodeError is the status of a response message that does not encode.
func encodeError(codec string, err error) *status.Error {
	return status.Errorf(protocol.CodeInternal, "server: encoding a response message with %s: %v", codec, err)
}
