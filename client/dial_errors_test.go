package client_test

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/client"
	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/protocol/status"
	"github.com/sluicerpc/sluice/server"
	"github.com/sluicerpc/sluice/server/servertest"
)

// requireSaidOnce checks that err's message says what happened once: one
// "sluice" prefix at most, and none of the Go operations, internal packages or
// syscalls that failed underneath.
func requireSaidOnce(t testing.TB, err error) {
	t.Helper()
	require.Error(t, err)
	msg := err.Error()
	assert.LessOrEqual(t, strings.Count(msg, "sluice"), 1, "one prefix at most: %s", msg)
	for _, internal := range []string{"dial tcp", "read tcp", "write tcp", "tls: ", "x509: ", "i/o timeout", "EOF", "context deadline exceeded", "internal/", "connect: ", "read: "} {
		assert.NotContains(t, msg, internal, "%s", msg)
	}
}

// TestDialErrorsSayWhatHappenedOnce: Dial's error names each endpoint's
// failure under one prefix; a call to an endpoint that cannot be reached
// says so once too.
func TestDialErrorsSayWhatHappenedOnce(t *testing.T) {
	a, b := deadAddr(t), deadAddr(t)
	_, err := client.Dial(ctxTimeout(t, 5*time.Second), []string{a, b}, client.Options{})
	requireSaidOnce(t, err)
	requireCode(t, err, protocol.CodeUnavailable)
	assert.Equal(t, "sluice client: no endpoint reachable: connecting to "+a+": connection refused (nothing listens there); connecting to "+b+": connection refused (nothing listens there)", err.Error())

	_, err = client.Dial(ctxTimeout(t, 5*time.Second), []string{a}, client.Options{})
	requireSaidOnce(t, err)
	assert.Equal(t, "sluice client: connecting to "+a+": connection refused (nothing listens there)", err.Error())

	ts := startServer(t, echoMux(nil), server.Options{})
	c := dial(t, client.Options{}, a, ts.addr)
	for range 4 { // the round-robin starts with a for some of them
		_, err := c.CallRaw(ctxTimeout(t, 5*time.Second), "echo/Echo", nil)
		require.NoError(t, err)
	}
	ts.close(t)
	_, err = c.CallRaw(ctxTimeout(t, 5*time.Second), "echo/Echo", nil)
	requireSaidOnce(t, err)
	requireCode(t, err, protocol.CodeUnavailable)
}

// TestPlaintextClientToTLSServerSaysTLS: a plaintext client dialing a
// TLS port is told that the server probably speaks TLS.
func TestPlaintextClientToTLSServerSaysTLS(t *testing.T) {
	ca := servertest.NewPKI(t, "test CA")
	ts := startServer(t, echoMux(nil), server.Options{TLS: ca.ServerConfig(t, false)})
	_, err := client.Dial(ctxTimeout(t, 5*time.Second), []string{ts.addr}, client.Options{})
	requireSaidOnce(t, err)
	requireCode(t, err, protocol.CodeUnavailable)
	assert.Contains(t, err.Error(), ts.addr)
	assert.Contains(t, err.Error(), "probably speaks TLS (this client uses plaintext)")

	// And the other way round.
	plain := startServer(t, echoMux(nil), server.Options{})
	_, err = client.Dial(ctxTimeout(t, 5*time.Second), []string{plain.addr}, client.Options{TLS: ca.ClientConfig(nil)})
	requireSaidOnce(t, err)
	assert.Contains(t, err.Error(), "the server does not speak TLS")
}

// TestRefusedAtTheConnectionBoundSaysSo: a server at its connection bound
// closes a new connection right after accepting it. In plaintext it first
// writes an Error frame saying so, which the client reports; over TLS the
// client can only tell that the connection closed before the handshake
// answer, and says that the server is probably at its connection limit.
func TestRefusedAtTheConnectionBoundSaysSo(t *testing.T) {
	ca := servertest.NewPKI(t, "test CA")
	for _, tc := range []struct {
		name string
		srv  *tls.Config
		cli  *tls.Config
		want string
	}{
		// A plaintext server says why in an Error frame; over TLS the
		// client can only tell from the closed connection.
		{"plaintext", nil, nil, "the server refused the handshake: Unavailable: the server is at its connection limit"},
		{"TLS", ca.ServerConfig(t, false), ca.ClientConfig(nil), "refused the connection at its connection limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := startServer(t, echoMux(nil), server.Options{TLS: tc.srv, Connections: server.ConnectionLimits{MaxConnections: 1}})
			dial(t, client.Options{TLS: tc.cli}, ts.addr) // takes the only connection
			for range 10 {
				_, err := client.Dial(ctxTimeout(t, 5*time.Second), []string{ts.addr}, client.Options{TLS: tc.cli})
				requireSaidOnce(t, err)
				requireCode(t, err, protocol.CodeUnavailable)
				assert.Contains(t, err.Error(), tc.want)
			}
			assert.Positive(t, ts.srv.Stats().RefusedConnectionLimit)
		})
	}
}

// silentListener accepts connections and never answers.
func silentListener(t testing.TB) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	return l.Addr().String()
}

// TestDeadlineDuringDialIsDeadlineExceeded: a deadline that ends while a
// dial is running reports DeadlineExceeded (errors.Is and the status
// code), saying what the dial was doing; the dial timeout, when the
// caller's deadline is later, is an Unavailable endpoint that says so.
func TestDeadlineDuringDialIsDeadlineExceeded(t *testing.T) {
	silent := silentListener(t)
	start := time.Now()
	_, err := client.Dial(ctxTimeout(t, 200*time.Millisecond), []string{silent}, client.Options{})
	assert.Less(t, time.Since(start), 2*time.Second)
	requireSaidOnce(t, err)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	requireCode(t, err, protocol.CodeDeadlineExceeded)
	assert.Equal(t, "sluice client: deadline exceeded while connecting to "+silent+" (waiting for the handshake answer)", err.Error())

	_, err = client.Dial(ctxTimeout(t, 5*time.Second), []string{silent}, client.Options{DialTimeout: 200 * time.Millisecond})
	requireSaidOnce(t, err)
	requireCode(t, err, protocol.CodeUnavailable)
	assert.Contains(t, err.Error(), "no answer within the dial timeout (200ms), waiting for the handshake answer")

	// A call whose deadline ends while it waits for a new connection: the
	// endpoint's connection is gone and the new dial gets no answer.
	ts := startServer(t, echoMux(nil), server.Options{})
	var hang atomic.Bool
	dialer := func(ctx context.Context, addr string) (net.Conn, error) {
		if hang.Load() {
			addr = silent
		}
		var d net.Dialer
		return d.DialContext(ctx, "tcp", addr)
	}
	c := dial(t, client.Options{Dialer: dialer}, ts.addr)
	_, err = c.CallRaw(ctxTimeout(t, 5*time.Second), "echo/Echo", nil)
	require.NoError(t, err)
	hang.Store(true)
	ts.close(t)
	require.Eventually(t, func() bool {
		_, err = c.CallRaw(ctxTimeout(t, 200*time.Millisecond), "echo/Echo", nil)
		return errors.Is(err, context.DeadlineExceeded)
	}, 5*time.Second, time.Millisecond, "last error: %v", err)
	requireSaidOnce(t, err)
	requireCode(t, err, protocol.CodeDeadlineExceeded)
	assert.Contains(t, err.Error(), "deadline exceeded while connecting to "+ts.addr+" (waiting for the handshake answer)")
	_, ok := status.FromError(err)
	assert.False(t, ok, "the caller's own context error, not a server status")
}
