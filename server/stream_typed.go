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
// messages, over the raw *Stream. They are registered with the
// package-level functions HandleServerStream, HandleClientStream and
// HandleBidiStream, as the typed unary Handle is; the Mux methods of the
// same names register raw handlers.
//
// Messages are decoded and encoded with the method's codecs
// (message.Codec). The contracts common to the three shapes:
//
//   - Receive returns each client message decoded into a new value, which
//     the handler owns (it may keep it after the next Receive and after the
//     call). io.EOF, the context's error and the raw stream's other errors
//     come through as the raw Receive returns them.
//   - A client message that does not decode fails the call with
//     InvalidArgument, strictly: that Receive returns the InvalidArgument
//     error, every later Receive and Send returns the same error without
//     touching the stream, and when the handler returns the stream ends
//     with that error whatever the handler returned (nil, another error,
//     or a response). A handler should return the error it got; one that
//     swallows it cannot make the call succeed or send anything more.
//   - Send encodes its message into a buffer the stream reuses (the raw
//     Send copies the message out before it returns), so a steady stream
//     costs no allocation beyond the codec's own. A message that does not
//     encode is a fault of the server: Send returns Internal and sends
//     nothing; the stream is still usable (the handler decides).
//   - Response headers and trailers are set with AddResponseMetadata, as
//     for raw streams: before the first message, the headers; after it, the
//     trailers.
//   - Concurrency is the raw Stream's: one goroutine receiving and one
//     sending at a time; both end with the handler.

// ServerStream is the server's side of a server-streaming call with
// responses of type Resp: the handler sends any number of them and
// returns (nil: the stream ends with status OK).
type ServerStream[Resp any] struct {
	out sender[Resp]
}

// Send encodes m with the method's response codec and sends it, blocking
// while the stream's or the connection's window is closed (bounded by the
// call's context), as the raw Stream.Send does. m is not retained. A
// message that does not encode returns Internal, and nothing is sent.
func (s *ServerStream[Resp]) Send(m *Resp) error { return s.out.send(m) }

// ClientStream is the server's side of a client-streaming call with
// requests of type Req: the handler receives them until io.EOF and
// returns the one response.
type ClientStream[Req any] struct {
	in receiver[Req]
}

// Receive returns the client's next message, decoded into a new Req; io.EOF
// once the client half-closed and every message was received. It blocks as
// the raw Stream.Receive does. A message that does not decode returns
// InvalidArgument and fails the call (see the package's typed-stream
// contract above).
func (s *ClientStream[Req]) Receive() (*Req, error) { return s.in.receive() }

// BidiStream is the server's side of a bidirectional stream with requests
// of type Req and responses of type Resp, received and sent in any order.
type BidiStream[Req, Resp any] struct {
	in  receiver[Req]
	out sender[Resp]
}

// Receive returns the client's next message, decoded into a new Req; io.EOF
// once the client half-closed. A message that does not decode returns
// InvalidArgument and fails the call: later Receives and Sends return the
// same error, and the stream ends with it.
func (s *BidiStream[Req, Resp]) Receive() (*Req, error) { return s.in.receive() }

// Send encodes m with the method's response codec and sends it (see
// ServerStream.Send). After a message failed to decode it returns that
// failure and sends nothing.
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
		s := &ClientStream[Req]{in: receiver[Req]{raw: raw, codec: reqCodec, failed: new(atomic.Pointer[status.Error])}}
		resp, err := h(ctx, s)
		if f := s.in.failed.Load(); f != nil {
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
		failed := new(atomic.Pointer[status.Error])
		s := &BidiStream[Req, Resp]{
			in:  receiver[Req]{raw: raw, codec: reqCodec, failed: failed},
			out: sender[Resp]{raw: raw, codec: respCodec, failed: failed},
		}
		err := h(ctx, s)
		if f := failed.Load(); f != nil {
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
