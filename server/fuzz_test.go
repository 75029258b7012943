package server_test

import (
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/codecs"
	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/server"
)

// pipeListener hands out in-memory connections (net.Pipe), so that a fuzz
// target can feed a server without sockets.
type pipeListener struct {
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), closed: make(chan struct{})}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

func (l *pipeListener) Addr() net.Addr { return pipeAddr{} }

// dial returns the client end of a new connection.
func (l *pipeListener) dial() net.Conn {
	client, srv := net.Pipe()
	l.conns <- srv
	return client
}

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe" }

// FuzzServerConnection sends a valid handshake (offering every codec),
// then arbitrary bytes: the server must never panic, must answer or close,
// must keep serving other connections, and must give back every budget.
// The seeds include compressed requests in each codec, whole and cut, so
// that the fuzzer reaches the decoders through the request path.
func FuzzServerConnection(f *testing.F) {
	req, _ := protocol.AppendRequest(nil, 1, &protocol.Request{Service: 0, Method: 0, Body: []byte("x")})
	f.Add(req)
	for i, name := range []string{"zstd", "s2", "gzip", "br"} {
		c, _ := codecs.ByName(name)
		body := compressible(3000)
		z, _, _ := c.Compress(make([]byte, 0, 4096), body)
		creq, _ := protocol.AppendRequest(nil, 1, &protocol.Request{Service: 0, Method: 0, Body: z,
			Compressed: true, CodecID: uint8(i + 1), OriginalLength: uint32(len(body)), Cancellable: true})
		f.Add(creq)
		f.Add(creq[:len(creq)-3])
	}
	cancel, _ := protocol.AppendCancel(nil, 1, protocol.CancelCaller)
	f.Add(append(append([]byte(nil), req...), cancel...))
	f.Add(protocol.AppendPing(nil, [8]byte{1}))
	f.Add([]byte{protocol.Magic, 3, 0, 0, 0xff, 0xff, 0xff, 0x7f})
	f.Add([]byte{})

	srv, err := server.New(newTestMux(newHandlers()), server.Options{HandshakeTimeout: time.Second, KeepaliveInterval: -1, IdleTimeout: -1})
	require.NoError(f, err)
	l := newPipeListener()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	f.Cleanup(func() {
		_ = srv.Close()
		<-served
	})
	hs, err := protocol.AppendHandshake(nil, &protocol.Handshake{Version: protocol.Version, MaxFrameSize: 1 << 20,
		Capabilities: protocol.CapCompression, Codecs: []string{"zstd", "s2", "gzip", "br"}})
	require.NoError(f, err)

	f.Fuzz(func(t *testing.T, junk []byte) {
		c := l.dial()
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		done := make(chan struct{})
		go func() { // drain whatever the server sends
			defer close(done)
			_, _ = io.Copy(io.Discard, c)
		}()
		if _, err := c.Write(hs); err != nil {
			t.Fatalf("handshake: %v", err)
		}
		if _, err := c.Write(junk); err != nil && !errors.Is(err, io.ErrClosedPipe) {
			t.Fatalf("write: %v", err)
		}
		_ = c.Close()
		<-done

		// The server still serves a well-behaved client.
		good := l.dial()
		defer good.Close()
		_ = good.SetDeadline(time.Now().Add(10 * time.Second))
		rd := protocol.NewReader(good, protocol.DefaultLimits())
		if _, err := good.Write(hs); err != nil {
			t.Fatal(err)
		}
		if h, _, err := rd.ReadFrame(); err != nil || h.Type != protocol.FrameHandshakeAck {
			t.Fatalf("handshake after junk: %v %v", h.Type, err)
		}
		if _, err := good.Write(req); err != nil {
			t.Fatal(err)
		}
		if h, _, err := rd.ReadFrame(); err != nil || h.Type != protocol.FrameResponse {
			t.Fatalf("call after junk: %v %v", h.Type, err)
		}
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
			g := srv.Stats().Governor
			if g.Decodes.Used == 0 && g.Retained.Used == 0 && g.Decoded.Used == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("budgets still held after the junk connection ended: %+v", g)
			}
		}
	})
}
