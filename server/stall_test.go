package server_test

import (
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/server"
)

// stallListener wraps a TCP listener so that a test can make the server's
// writes stall, as they do when a client stops reading and the socket
// buffers are full (on loopback they hold tens of MiB, so filling them
// for real takes long and depends on the kernel's tuning). A stalled
// Write returns only when the connection is closed (net.ErrClosed) or its
// write deadline passes (os.ErrDeadlineExceeded), like a real one.
type stallListener struct {
	net.Listener
	mu    sync.Mutex
	conns []*stallConn
	stall bool
}

func (l *stallListener) Accept() (net.Conn, error) {
	nc, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	c := &stallConn{Conn: nc, closed: make(chan struct{})}
	l.mu.Lock()
	c.stalled = l.stall
	l.conns = append(l.conns, c)
	l.mu.Unlock()
	return c, nil
}

// stallWrites makes every later Write of the accepted connections stall.
func (l *stallListener) stallWrites() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stall = true
	for _, c := range l.conns {
		c.mu.Lock()
		c.stalled = true
		c.mu.Unlock()
	}
}

type stallConn struct {
	net.Conn
	mu        sync.Mutex
	stalled   bool
	deadline  time.Time
	closeOnce sync.Once
	closed    chan struct{}
}

func (c *stallConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	stalled, deadline := c.stalled, c.deadline
	c.mu.Unlock()
	if !stalled {
		return c.Conn.Write(p)
	}
	var expired <-chan time.Time
	if !deadline.IsZero() {
		t := time.NewTimer(time.Until(deadline))
		defer t.Stop()
		expired = t.C
	}
	select {
	case <-c.closed:
		return 0, net.ErrClosed
	case <-expired:
		return 0, os.ErrDeadlineExceeded
	}
}

func (c *stallConn) SetWriteDeadline(t time.Time) error {
	c.mu.Lock()
	c.deadline = t
	c.mu.Unlock()
	return c.Conn.SetWriteDeadline(t)
}

func (c *stallConn) SetDeadline(t time.Time) error {
	c.mu.Lock()
	c.deadline = t
	c.mu.Unlock()
	return c.Conn.SetDeadline(t)
}

func (c *stallConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return c.Conn.Close()
}

// startStallServer is startServer on a stallListener.
func startStallServer(t testing.TB, o server.Options) (*testServer, *stallListener) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	sl := &stallListener{Listener: l}
	return serveOn(t, sl, o), sl
}
