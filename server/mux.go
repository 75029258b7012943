package server

import (
	"context"
	"fmt"

	"github.com/sluicerpc/sluice/message"
)

// RawHandler handles a call on raw bodies. req is valid only until the
// handler returns (the server reuses its buffer); the returned body is
// copied into the response frame, so the handler may reuse it afterwards.
// For a one-way call the returned body is discarded.
//
// Returning a *status.Error chooses the status the caller sees; any other
// error is sent as Unknown with its text. A panic is recovered and sent as
// Internal; the connection and the server keep running.
type RawHandler func(ctx context.Context, req []byte) ([]byte, error)

// invoker is a registered method's handler in the form the request path
// calls: it appends the response body to out.
type invoker func(ctx context.Context, req, out []byte) ([]byte, error)

// Mux collects the services and methods a Server serves. Register every
// method before New: the method table is fixed for the server's lifetime
// (clients learn it in the handshake, admission rules name its methods).
// Registration panics on a programmer error (a duplicate, an empty or too
// long name), as net/http's ServeMux does.
type Mux struct {
	services []*muxService
	byName   map[string]*muxService
	frozen   bool
}

type muxService struct {
	name    string
	methods []muxMethod
	byName  map[string]int
}

type muxMethod struct {
	name   string
	invoke invoker       // unary methods
	kind   streamKind    // the method's shape
	stream streamInvoker // stream methods
}

// NewMux returns an empty Mux.
func NewMux() *Mux { return &Mux{byName: map[string]*muxService{}} }

// maxNameLen is the protocol's bound on service and method names.
const maxNameLen = 255

// HandleRaw registers h for service/method.
func (m *Mux) HandleRaw(service, method string, h RawHandler) {
	if h == nil {
		panic(fmt.Sprintf("server: nil handler for %s/%s", service, method))
	}
	m.add(service, method, func(ctx context.Context, req, out []byte) ([]byte, error) {
		resp, err := h(ctx, req)
		if err != nil {
			return out, err
		}
		return append(out, resp...), nil
	})
}

// Handle registers a typed unary handler for service/method: the request
// body is decoded with reqCodec (an undecodable body answers
// InvalidArgument without calling h) and h's response is encoded with
// respCodec.
func Handle[Req, Resp any](m *Mux, service, method string, reqCodec message.Codec[Req], respCodec message.Codec[Resp], h func(ctx context.Context, req *Req) (*Resp, error)) {
	if h == nil || reqCodec == nil || respCodec == nil {
		panic(fmt.Sprintf("server: nil handler or codec for %s/%s", service, method))
	}
	m.add(service, method, func(ctx context.Context, body, out []byte) ([]byte, error) {
		req := new(Req)
		if err := reqCodec.Unmarshal(body, req); err != nil {
			return out, invalidArgument(err)
		}
		resp, err := h(ctx, req)
		if err != nil {
			return out, err
		}
		return respCodec.AppendMarshal(out, resp)
	})
}

// HandleOneWay registers a typed handler meant for one-way calls: it
// returns no response body (a client that calls it as a unary call gets an
// empty response once h returns).
func HandleOneWay[Req any](m *Mux, service, method string, reqCodec message.Codec[Req], h func(ctx context.Context, req *Req) error) {
	if h == nil || reqCodec == nil {
		panic(fmt.Sprintf("server: nil handler or codec for %s/%s", service, method))
	}
	m.add(service, method, func(ctx context.Context, body, out []byte) ([]byte, error) {
		req := new(Req)
		if err := reqCodec.Unmarshal(body, req); err != nil {
			return out, invalidArgument(err)
		}
		return out, h(ctx, req)
	})
}

func (m *Mux) add(service, method string, inv invoker) {
	switch {
	case m.frozen:
		panic(fmt.Sprintf("server: %s/%s registered after the Mux was used by New", service, method))
	case service == "" || method == "":
		panic(fmt.Sprintf("server: empty service or method name in %q/%q", service, method))
	case len(service) > maxNameLen || len(method) > maxNameLen:
		panic(fmt.Sprintf("server: service and method names are at most %d bytes: %q/%q", maxNameLen, service, method))
	}
	s := m.byName[service]
	if s == nil {
		s = &muxService{name: service, byName: map[string]int{}}
		m.byName[service] = s
		m.services = append(m.services, s)
	}
	if _, dup := s.byName[method]; dup {
		panic(fmt.Sprintf("server: %s/%s registered twice", service, method))
	}
	if len(s.methods) == 0xFFFF {
		panic(fmt.Sprintf("server: service %s has too many methods", service))
	}
	s.byName[method] = len(s.methods)
	s.methods = append(s.methods, muxMethod{name: method, invoke: inv})
}
