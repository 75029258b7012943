package server

import (
	"context"
	"fmt"
)

// streamKind is the shape of a registered method: unary, or one of the
// three stream shapes (docs/streaming.md). A method remembers its kind; a
// Request whose Stream flag does not match it is refused on its call with
// Unimplemented (the method is not implemented in the shape it was
// called in), before admission.
type streamKind uint8

const (
	kindUnary streamKind = iota
	kindServerStream
	kindClientStream
	kindBidiStream
)

func (k streamKind) String() string {
	switch k {
	case kindServerStream:
		return "server-streaming"
	case kindClientStream:
		return "client-streaming"
	case kindBidiStream:
		return "bidirectional-streaming"
	}
	return "unary"
}

// streamInvoker is a registered stream method's handler in the form the
// stream runtime calls: it runs the handler on s and returns its error;
// the runtime then ends the stream (End on nil, Error otherwise).
type streamInvoker func(ctx context.Context, s *Stream) error

// ServerStreamHandler handles a server-streaming call: req is the
// client's one message (valid until the handler returns), and the
// handler sends any number of messages with s.Send. Returning nil ends
// the stream with status OK (an End frame with the response metadata set
// after the first Send as trailers); an error ends it as a unary handler's
// error does.
type ServerStreamHandler func(ctx context.Context, req []byte, s *Stream) error

// ClientStreamHandler handles a client-streaming call: it receives the
// client's messages with s.Receive until io.EOF and returns the one
// response (copied: the handler may reuse it afterwards).
type ClientStreamHandler func(ctx context.Context, s *Stream) ([]byte, error)

// BidiStreamHandler handles a bidirectional stream: Receive and Send in
// any order (one goroutine receiving and one sending at a time).
type BidiStreamHandler func(ctx context.Context, s *Stream) error

// HandleServerStream registers a server-streaming method. The opening
// Request must carry the client's message and its half-close (one frame:
// Stream, HasMessage, EndStream); otherwise the call is refused with
// InvalidArgument.
func (m *Mux) HandleServerStream(service, method string, h ServerStreamHandler) {
	if h == nil {
		panic(fmt.Sprintf("server: nil handler for %s/%s", service, method))
	}
	m.addStream(service, method, kindServerStream, func(ctx context.Context, s *Stream) error {
		req, err := s.Receive()
		if err != nil {
			return err
		}
		return h(ctx, req, s)
	})
}

// HandleClientStream registers a client-streaming method.
func (m *Mux) HandleClientStream(service, method string, h ClientStreamHandler) {
	if h == nil {
		panic(fmt.Sprintf("server: nil handler for %s/%s", service, method))
	}
	m.addStream(service, method, kindClientStream, func(ctx context.Context, s *Stream) error {
		resp, err := h(ctx, s)
		if err != nil {
			return err
		}
		return s.send(resp)
	})
}

// HandleBidiStream registers a bidirectional-streaming method.
func (m *Mux) HandleBidiStream(service, method string, h BidiStreamHandler) {
	if h == nil {
		panic(fmt.Sprintf("server: nil handler for %s/%s", service, method))
	}
	m.addStream(service, method, kindBidiStream, func(ctx context.Context, s *Stream) error { return h(ctx, s) })
}

func (m *Mux) addStream(service, method string, kind streamKind, inv streamInvoker) {
	m.add(service, method, nil)
	s := m.byName[service]
	mm := &s.methods[len(s.methods)-1]
	mm.kind, mm.stream = kind, inv
}
