package server_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"time"

	"github.com/sluicerpc/sluice/kernel"
	"github.com/sluicerpc/sluice/limiters/concurrency"
	"github.com/sluicerpc/sluice/limiters/tokenbucket"
	"github.com/sluicerpc/sluice/message"
	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/server"
	"github.com/sluicerpc/sluice/spi"
)

type (
	greetRequest struct {
		Name string `json:"name"`
	}
	greetReply struct {
		Greeting string `json:"greeting"`
	}
)

// The common case: register typed handlers, build the server with its
// first admission program, serve, change the program while serving
// (Reconfigure, from the generation in force), and stop gracefully. The
// calls here are raw protocol frames, because the server module has no
// client; a program uses package client.
func ExampleNew() {
	mux := server.NewMux()
	server.Handle(mux, "greeter", "Hello", message.JSON[greetRequest](), message.JSON[greetReply](),
		func(_ context.Context, req *greetRequest) (*greetReply, error) {
			return &greetReply{Greeting: "hello, " + req.Name}, nil
		})
	srv, err := server.New(mux, server.Options{
		Admission: &kernel.Options{Global: kernel.Rule{Limits: []spi.Spec{concurrency.Spec(64)}}},
	})
	if err != nil {
		panic(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()

	call := dialWire(l.Addr().String())
	defer call.close()
	fmt.Println(call.unary("greeter", "Hello", `{"name":"ann"}`))

	// One call an hour for greeter/Hello from now on; the bucket starts
	// full.
	gen, err := srv.Reconfigure(srv.Admission().Generation(), server.Settings{Admission: &kernel.Options{
		Global:  kernel.Rule{Limits: []spi.Spec{concurrency.Spec(64)}},
		Methods: map[string]kernel.Rule{"greeter/Hello": {Limits: []spi.Spec{tokenbucket.Spec(1, 1, time.Hour)}}},
	}})
	fmt.Println(gen, err)
	fmt.Println(call.unary("greeter", "Hello", `{"name":"bob"}`))
	fmt.Println(call.unary("greeter", "Hello", `{"name":"eve"}`))

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	fmt.Println(srv.Stop(ctx), errors.Is(<-served, server.ErrServerClosed))
	// Output:
	// {"greeting":"hello, ann"}
	// 2 <nil>
	// {"greeting":"hello, bob"}
	// ResourceExhausted (rate): admission refused: method:greeter/Hello/rate
	// <nil> true
}

// wireConn speaks the wire protocol (package protocol) over one connection.
type wireConn struct {
	nc  net.Conn
	rd  *protocol.Reader
	ack protocol.HandshakeAck
	id  uint64 // the last request id; a client starts at 1
}

func dialWire(addr string) *wireConn {
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		panic(err)
	}
	c := &wireConn{nc: nc, rd: protocol.NewReader(nc, protocol.DefaultLimits())}
	c.write(protocol.AppendHandshake(nil, &protocol.Handshake{Version: protocol.Version, MaxFrameSize: 1 << 20}))
	h, payload := c.read()
	if err := protocol.ParseHandshakeAck(h, payload, &c.ack); err != nil {
		panic(err)
	}
	return c
}

func (c *wireConn) close() { _ = c.nc.Close() }

func (c *wireConn) write(frame []byte, err error) {
	if err == nil {
		_, err = c.nc.Write(frame)
	}
	if err != nil {
		panic(err)
	}
}

// read returns the next frame other than a keepalive Ping.
func (c *wireConn) read() (protocol.Header, []byte) {
	for {
		_ = c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
		h, payload, err := c.rd.ReadFrame()
		if err != nil {
			panic(err)
		}
		if h.Type != protocol.FramePing {
			return h, payload
		}
	}
}

// unary calls service/method, found in the HandshakeAck's method table,
// and returns the response body or the call's error.
func (c *wireConn) unary(service, method, body string) string {
	si := slices.IndexFunc(c.ack.Services, func(s protocol.ServiceInfo) bool { return s.Name == service })
	mi := slices.Index(c.ack.Services[si].Methods, method)
	c.id++
	c.write(protocol.AppendRequest(nil, c.id, &protocol.Request{Service: uint16(si), Method: uint16(mi), Body: []byte(body)}))
	h, payload := c.read()
	switch h.Type {
	case protocol.FrameResponse:
		var r protocol.Response
		if err := protocol.ParseResponse(h, payload, protocol.DefaultLimits(), &r); err != nil {
			panic(err)
		}
		return string(r.Body)
	case protocol.FrameError:
		var e protocol.ErrorFrame
		if err := protocol.ParseError(h, payload, protocol.DefaultLimits(), &e); err != nil {
			panic(err)
		}
		return fmt.Sprintf("%v (%s): %s", e.Code, e.Reason, e.Message)
	}
	panic(fmt.Sprintf("unexpected %v frame", h.Type))
}
