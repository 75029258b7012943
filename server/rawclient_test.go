package server_test

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/message"
	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/server"
	"github.com/sluicerpc/sluice/server/servertest"
)

// rawClient speaks the protocol frame by frame, so that tests can see
// every frame the server sends and send frames a real client never would.
type rawClient struct {
	t      testing.TB
	nc     net.Conn
	rd     *protocol.Reader
	ack    protocol.HandshakeAck
	nextID uint64
	buf    []byte
}

// dialRaw connects and completes the handshake.
func dialRaw(t testing.TB, addr string) *rawClient {
	t.Helper()
	c := dialNoHandshake(t, addr)
	c.handshake(nil)
	return c
}

func dialNoHandshake(t testing.TB, addr string) *rawClient {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 10*time.Second)
	require.NoError(t, err)
	return newRawClient(t, nc)
}

// newRawClient speaks over nc, closed when the test ends.
func newRawClient(t testing.TB, nc net.Conn) *rawClient {
	t.Cleanup(func() { _ = nc.Close() })
	return &rawClient{t: t, nc: nc, rd: protocol.NewReader(nc, protocol.DefaultLimits())}
}

func (c *rawClient) handshake(auth []byte) {
	c.t.Helper()
	c.handshakeWith(protocol.Handshake{Auth: auth})
}

// handshakeWith sends hs (Version and MaxFrameSize filled in when zero)
// and reads the ack.
func (c *rawClient) handshakeWith(hs protocol.Handshake) {
	c.t.Helper()
	if hs.Version == 0 {
		hs.Version = protocol.Version
	}
	if hs.MaxFrameSize == 0 {
		hs.MaxFrameSize = 1 << 20
	}
	frame, err := protocol.AppendHandshake(nil, &hs)
	require.NoError(c.t, err)
	c.write(frame)
	h, payload := c.read()
	require.Equal(c.t, protocol.FrameHandshakeAck, h.Type, "handshake answered with %v", h.Type)
	require.NoError(c.t, protocol.ParseHandshakeAck(h, payload, &c.ack))
}

func (c *rawClient) write(frame []byte) {
	c.t.Helper()
	_ = c.nc.SetWriteDeadline(time.Now().Add(10 * time.Second))
	_, err := c.nc.Write(frame)
	require.NoError(c.t, err)
}

// read returns the next frame, failing after 10s.
func (c *rawClient) read() (protocol.Header, []byte) {
	c.t.Helper()
	h, payload, err := c.readErr()
	require.NoError(c.t, err)
	return h, payload
}

func (c *rawClient) readErr() (protocol.Header, []byte, error) {
	_ = c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	return c.rd.ReadFrame()
}

// method returns the ids of service/method in the server's table.
func (c *rawClient) method(service, method string) (uint16, uint16) {
	c.t.Helper()
	for si, s := range c.ack.Services {
		if s.Name != service {
			continue
		}
		for mi, m := range s.Methods {
			if m == method {
				return uint16(si), uint16(mi)
			}
		}
	}
	c.t.Fatalf("no %s/%s in the server's table", service, method)
	return 0, 0
}

// send sends a request and returns its id.
func (c *rawClient) send(service, method string, body []byte, mod func(*protocol.Request)) uint64 {
	c.t.Helper()
	si, mi := c.method(service, method)
	c.nextID++
	r := protocol.Request{Service: si, Method: mi, Body: body, Cancellable: true}
	if mod != nil {
		mod(&r)
	}
	frame, err := protocol.AppendRequest(c.buf[:0], c.nextID, &r)
	require.NoError(c.t, err)
	c.write(frame)
	return c.nextID
}

// requestFrame encodes the next request (the id sequence advances as with
// send) without writing it, for tests that write beside the test.
func (c *rawClient) requestFrame(service, method string, body []byte) []byte {
	c.t.Helper()
	si, mi := c.method(service, method)
	c.nextID++
	frame, err := protocol.AppendRequest(nil, c.nextID, &protocol.Request{Service: si, Method: mi, Body: body, Cancellable: true})
	require.NoError(c.t, err)
	return frame
}

// result is the answer to one call. A compressed response keeps its
// compressed body, codec id and declared length.
type result struct {
	id         uint64
	body       []byte
	err        *protocol.ErrorFrame
	compressed bool
	codecID    uint8
	origLen    uint32
}

// next reads frames until the answer to a call, skipping pings.
func (c *rawClient) next() result {
	c.t.Helper()
	for {
		h, payload := c.read()
		switch h.Type {
		case protocol.FrameResponse:
			var r protocol.Response
			require.NoError(c.t, protocol.ParseResponse(h, payload, protocol.DefaultLimits(), &r))
			return result{id: h.ID, body: append([]byte(nil), r.Body...), compressed: r.Compressed, codecID: r.CodecID, origLen: r.OriginalLength}
		case protocol.FrameError:
			var e protocol.ErrorFrame
			require.NoError(c.t, protocol.ParseError(h, payload, protocol.DefaultLimits(), &e))
			return result{id: h.ID, err: &e}
		case protocol.FramePing:
			continue
		default:
			c.t.Fatalf("unexpected %v frame", h.Type)
		}
	}
}

// call sends one request and waits for its answer.
func (c *rawClient) call(service, method string, body []byte) result {
	c.t.Helper()
	id := c.send(service, method, body, nil)
	r := c.next()
	require.Equal(c.t, id, r.id)
	return r
}

// expectClosed waits for the server to close the connection, skipping
// the frames before it, and returns the connection Error if one came.
func (c *rawClient) expectClosed() *protocol.ErrorFrame {
	c.t.Helper()
	var connErr *protocol.ErrorFrame
	for {
		h, payload, err := c.readErr()
		if err != nil {
			require.NotErrorIs(c.t, err, context.DeadlineExceeded)
			var ne net.Error
			if ok := asNetErr(err, &ne); ok && ne.Timeout() {
				c.t.Fatal("the server did not close the connection")
			}
			return connErr
		}
		if h.Type == protocol.FrameError && h.ID == 0 {
			var e protocol.ErrorFrame
			if protocol.ParseError(h, payload, protocol.DefaultLimits(), &e) == nil {
				connErr = &e
			}
		}
	}
}

// testServer is a running server with the methods of newTestMux.
type testServer struct {
	*server.Server
	addr string
	mux  *testHandlers
}

// testHandlers lets tests control the handlers' behaviour.
type testHandlers struct {
	mu      sync.Mutex
	block   chan struct{} // Hold blocks until closed
	entered chan struct{} // Hold signals entry
	ctxErr  chan error    // Hold reports ctx.Err() when it returns
	oneWay  chan []byte   // OneWay delivers its body
	peers   chan server.Peer
	st      *streamHandlers // the stream methods'
}

type echoReq struct {
	Text string `json:"text"`
}
type echoResp struct {
	Text string `json:"text"`
	N    int    `json:"n"`
}

func newTestMux(h *testHandlers) *server.Mux {
	mux := server.NewMux()
	mux.HandleRaw("echo", "Say", func(_ context.Context, req []byte) ([]byte, error) { return req, nil })
	mux.HandleRaw("echo", "Fail", func(context.Context, []byte) ([]byte, error) {
		return nil, &statusError
	})
	mux.HandleRaw("echo", "Plain", func(context.Context, []byte) ([]byte, error) { return nil, errPlain })
	mux.HandleRaw("echo", "Panic", func(context.Context, []byte) ([]byte, error) { panic("boom") })
	mux.HandleRaw("echo", "Hold", func(ctx context.Context, req []byte) ([]byte, error) {
		h.entered <- struct{}{}
		select {
		case <-h.block:
		case <-ctx.Done():
		}
		h.ctxErr <- ctx.Err()
		return req, nil
	})
	mux.HandleRaw("echo", "OneWay", func(_ context.Context, req []byte) ([]byte, error) {
		h.oneWay <- append([]byte(nil), req...)
		return nil, nil
	})
	mux.HandleRaw("echo", "Peer", func(ctx context.Context, _ []byte) ([]byte, error) {
		p, _ := server.PeerFromContext(ctx)
		return []byte(p.Identity), nil
	})
	server.Handle(mux, "typed", "Echo", message.JSON[echoReq](), message.JSON[echoResp](),
		func(_ context.Context, r *echoReq) (*echoResp, error) {
			return &echoResp{Text: r.Text, N: len(r.Text)}, nil
		})
	registerStreams(mux, h.st)
	return mux
}

func newHandlers() *testHandlers {
	return &testHandlers{
		block:   make(chan struct{}),
		entered: make(chan struct{}, 1024),
		ctxErr:  make(chan error, 1024),
		oneWay:  make(chan []byte, 1024),
		st:      newStreamHandlers(),
	}
}

// startServer serves newTestMux on a loopback listener until the test ends.
//
// Its streams keep the initial window (StreamWindow defaults to
// protocol.InitialStreamWindow here, not to the server's 256 KiB), so that
// the frame-exact stream tests see no growth; TestStreamWindowGrowsOnAdmission
// covers the growth.
func startServer(t testing.TB, o server.Options) *testServer {
	t.Helper()
	if o.StreamWindow == 0 {
		o.StreamWindow = protocol.InitialStreamWindow
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	return serveOn(t, l, o)
}

// pipeServer is a testServer on an in-memory network, for tests that run
// in a synctest bubble (call it there): its timeouts, keepalives and
// handshake deadlines run on the bubble's clock, which only advances when
// every goroutine of the test waits.
type pipeServer struct {
	*testServer
	net *servertest.Network
}

func startPipeServer(t *testing.T, o server.Options) *pipeServer {
	t.Helper()
	n := servertest.NewNetwork()
	l, err := n.Listen("")
	require.NoError(t, err)
	return &pipeServer{testServer: serveOn(t, l, o), net: n}
}

// dial returns a new connection to the server, without a handshake.
func (s *pipeServer) dial(t *testing.T) net.Conn {
	t.Helper()
	nc, err := s.net.Dial(context.Background(), s.addr)
	require.NoError(t, err)
	return nc
}

// dialNoHandshake and dialRaw are the functions of the same name on s.
func (s *pipeServer) dialNoHandshake(t *testing.T) *rawClient {
	t.Helper()
	return newRawClient(t, s.dial(t))
}

func (s *pipeServer) dialRaw(t *testing.T) *rawClient {
	t.Helper()
	c := s.dialNoHandshake(t)
	c.handshake(nil)
	return c
}

// serveOn serves newTestMux on l until the test ends.
func serveOn(t testing.TB, l net.Listener, o server.Options) *testServer {
	t.Helper()
	h := newHandlers()
	srv, err := server.New(newTestMux(h), o)
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(l) }()
	t.Cleanup(func() {
		_ = srv.Close()
		require.ErrorIs(t, <-done, server.ErrServerClosed)
	})
	return &testServer{Server: srv, addr: l.Addr().String(), mux: h}
}

// serveMux serves mux with default options on a loopback listener until
// the test ends.
func serveMux(t testing.TB, mux *server.Mux) (*server.Server, string) {
	t.Helper()
	srv, err := server.New(mux, server.Options{})
	require.NoError(t, err)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close(); <-done })
	return srv, l.Addr().String()
}
