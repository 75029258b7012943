package client_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sluicerpc/sluice/client"
	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/protocol/status"
	"github.com/sluicerpc/sluice/server"
	"github.com/sluicerpc/sluice/server/servertest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testServer is a real server on a TCP loopback listener.
type testServer struct {
	srv  *server.Server
	addr string
	done chan error
}

// startServer serves mux on a loopback listener until the test ends.
func startServer(t testing.TB, mux *server.Mux, o server.Options) *testServer {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	return serve(t, mux, o, l)
}

// serve serves mux on l until the test ends.
func serve(t testing.TB, mux *server.Mux, o server.Options, l net.Listener) *testServer {
	t.Helper()
	srv, err := server.New(mux, o)
	require.NoError(t, err)
	ts := &testServer{srv: srv, addr: l.Addr().String(), done: make(chan error, 1)}
	go func() { ts.done <- srv.Serve(l) }()
	t.Cleanup(func() { ts.close(t) })
	return ts
}

// pipeNet is an in-memory network (servertest.Network) for the tests that
// run in a testing/synctest bubble. There the timeouts, backoffs,
// keepalives, budgets and token refills of client and server run on the
// bubble's fake clock, which advances only once every goroutine of the
// test waits: however slow the machine, a test sees the same timeline.
// Make it, and everything on it, inside the bubble.
type pipeNet struct{ n *servertest.Network }

func newPipeNet() pipeNet { return pipeNet{servertest.NewNetwork()} }

// startServer is startServer on the in-memory network, at addr or, when
// addr is empty, at a new address.
func (p pipeNet) startServer(t testing.TB, mux *server.Mux, o server.Options, addr string) *testServer {
	t.Helper()
	l, err := p.n.Listen(addr)
	require.NoError(t, err)
	return serve(t, mux, o, l)
}

// dial is dial over the in-memory network.
func (p pipeNet) dial(t testing.TB, o client.Options, addrs ...string) *client.Client {
	t.Helper()
	o.Dialer = p.n.Dial
	return dial(t, o, addrs...)
}

// close closes the server and waits for Serve to return; idempotent.
func (ts *testServer) close(t testing.TB) {
	_ = ts.srv.Close()
	select {
	case err, ok := <-ts.done:
		if ok {
			require.ErrorIs(t, err, server.ErrServerClosed)
			close(ts.done)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return after Close")
	}
}

// echoMux serves echo/Echo, plus any extra handlers.
func echoMux(extra map[string]server.RawHandler) *server.Mux {
	mux := server.NewMux()
	mux.HandleRaw("echo", "Echo", func(_ context.Context, req []byte) ([]byte, error) { return req, nil })
	for full, h := range extra {
		svc, m, _ := cut(full)
		mux.HandleRaw(svc, m, h)
	}
	return mux
}

func cut(full string) (string, string, bool) {
	for i := range len(full) {
		if full[i] == '/' {
			return full[:i], full[i+1:], true
		}
	}
	return full, "", false
}

// Its streams keep the initial window (StreamWindow defaults to
// protocol.InitialStreamWindow here, not to the client's 256 KiB), so that
// the frame-exact stream tests against a scripted peer see no growth;
// TestStreamWindowGrowsAfterTheRequest covers the growth.
func dial(t testing.TB, o client.Options, addrs ...string) *client.Client {
	t.Helper()
	if o.StreamWindow == 0 {
		o.StreamWindow = protocol.InitialStreamWindow
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, addrs, o)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, c.Close()) })
	return c
}

func ctxTimeout(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func requireCode(t testing.TB, err error, code protocol.Code) *status.Error {
	t.Helper()
	require.Error(t, err)
	require.Equal(t, code, status.Code(err), "error: %v", err)
	st, _ := status.FromError(err)
	return st
}

// blocker is a handler that blocks until its context ends or it is
// released, and reports both.
type blocker struct {
	started  chan struct{}
	release  chan struct{}
	ended    chan error // ctx.Err() when the context ended, nil when released
	deadline chan time.Duration
}

func newBlocker(n int) *blocker {
	n += 16 // room for calls the test does not wait for
	return &blocker{started: make(chan struct{}, n), release: make(chan struct{}), ended: make(chan error, n), deadline: make(chan time.Duration, n)}
}

func (b *blocker) handle(ctx context.Context, _ []byte) ([]byte, error) {
	if dl, ok := ctx.Deadline(); ok {
		b.deadline <- time.Until(dl)
	} else {
		b.deadline <- -1
	}
	b.started <- struct{}{}
	select {
	case <-ctx.Done():
		b.ended <- ctx.Err()
		return nil, ctx.Err()
	case <-b.release:
		b.ended <- nil
		return []byte("released"), nil
	}
}

func recv[T any](t testing.TB, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(5 * time.Second):
		t.Fatal("timed out waiting")
		panic("unreachable")
	}
}
