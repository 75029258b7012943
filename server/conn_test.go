package server_test

import (
	"context"
	"crypto/tls"
	"math/rand/v2"
	"net"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/protocol/status"
	"github.com/sluicerpc/sluice/server"
)

// TestConnectionChurnBackToZero: 2,000 connections come and go, in
// parallel; every connection and handshake slot is given back.
func TestConnectionChurnBackToZero(t *testing.T) {
	// Every bound out of the way, the per-address one too: the 8 dialers
	// share 127.0.0.1, and the connections closed without a handshake
	// stay in handshake until the server reads their end.
	s := startServer(t, server.Options{Connections: server.ConnectionLimits{MaxConnections: 4096, MaxHandshakes: 4096, MaxHandshakesPerAddress: 4096}})
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 250 {
				c := dialNoHandshake(t, s.addr)
				switch (w + i) % 3 {
				case 0: // a full call
					c.handshake(nil)
					assert.Equal(t, "x", string(c.call("echo", "Say", []byte("x")).body))
				case 1: // a handshake only
					c.handshake(nil)
				}
				_ = c.nc.Close() // case 2: nothing at all
			}
		})
	}
	wg.Wait()
	require.Eventually(t, func() bool {
		st := s.Stats()
		return st.Connections == 0 && st.Handshakes == 0
	}, 30*time.Second, 5*time.Millisecond, "%+v", s.Stats())
	assert.Equal(t, uint64(2000), s.Stats().ConnectionsAdmitted)
}

// TestSilentConnectionsHeldAtTheBounds: connections that send nothing are
// refused beyond the handshake bound, and beyond the connection bound once
// handshakes complete; refused connections start no goroutine. In a
// synctest bubble: every count is read once the server has handled every
// connection, not guessed with a slack.
func TestSilentConnectionsHeldAtTheBounds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := startPipeServer(t, server.Options{
			Connections:      server.ConnectionLimits{MaxConnections: 6, MaxHandshakes: 3},
			HandshakeTimeout: time.Minute,
		})
		var silent []*rawClient
		for range 3 {
			silent = append(silent, s.dialNoHandshake(t))
		}
		synctest.Wait()
		require.Equal(t, 3, s.Stats().Handshakes)
		before := runtime.NumGoroutine()
		for range 50 {
			c := s.dialNoHandshake(t)
			requireRefusedAtAccept(t, c, "the server is at its limit of connections in handshake")
		}
		synctest.Wait()
		assert.Equal(t, uint64(50), s.Stats().RefusedHandshakeLimit)
		assert.LessOrEqual(t, runtime.NumGoroutine(), before, "refused connections started goroutines")
		assert.Equal(t, 3, s.Stats().Connections)

		// Completing the handshakes frees handshake slots, not connection slots.
		for _, c := range silent {
			c.handshake(nil)
		}
		var ready []*rawClient
		for range 3 {
			c := s.dialRaw(t)
			ready = append(ready, c)
		}
		c := s.dialNoHandshake(t)
		requireRefusedAtAccept(t, c, "the server is at its connection limit")
		assert.Equal(t, uint64(1), s.Stats().RefusedConnectionLimit)

		// Raising the bound live admits more; lowering it closes nobody.
		require.NoError(t, s.SetConnectionLimits(server.ConnectionLimits{MaxConnections: 7, MaxHandshakes: 3}))
		extra := s.dialRaw(t)
		require.NoError(t, s.SetConnectionLimits(server.ConnectionLimits{MaxConnections: 2, MaxHandshakes: 1}))
		for _, c := range append(ready, extra, silent[0]) {
			assert.Equal(t, "still", string(c.call("echo", "Say", []byte("still")).body))
		}
	})
}

// TestHandshakeTimeout: a connection that never completes its handshake
// is closed after the timeout and its slots come back.
func TestHandshakeTimeout(t *testing.T) {
	s := startServer(t, server.Options{HandshakeTimeout: 100 * time.Millisecond})
	c := dialNoHandshake(t, s.addr)
	c.expectClosed()
	require.Eventually(t, func() bool { return s.Stats().Connections == 0 }, 10*time.Second, time.Millisecond)
	assert.Equal(t, uint64(1), s.Stats().HandshakeFailures)
}

// TestStalledTLSHandshakesHeldAtTheBound: TLS clients that stop in the
// middle of the TLS handshake occupy handshake slots until the timeout;
// more are refused meanwhile; then the slots come back. On synctest's
// clock the stalled handshakes are held for exactly the timeout, however
// long the machine takes to set them up.
func TestStalledTLSHandshakesHeldAtTheBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const timeout = 500 * time.Millisecond
		pki := newTestPKI(t) // in the bubble: valid around its clock
		s := startPipeServer(t, server.Options{
			TLS:              pki.serverConfig(false),
			Connections:      server.ConnectionLimits{MaxConnections: 100, MaxHandshakes: 4},
			HandshakeTimeout: timeout,
		})
		start := time.Now()
		for range 4 {
			nc := s.dial(t)
			t.Cleanup(func() { _ = nc.Close() })
			// Half a ClientHello: a record header promising more bytes.
			_, err := nc.Write([]byte{0x16, 0x03, 0x01, 0x02, 0x00, 0x01})
			require.NoError(t, err)
		}
		synctest.Wait()
		require.Equal(t, 4, s.Stats().Handshakes)
		cfg := pki.clientConfig(nil)
		cfg.ServerName = "127.0.0.1" // what tls.Dial would take from a loopback address
		fifth := tls.Client(s.dial(t), cfg)
		t.Cleanup(func() { _ = fifth.Close() })
		require.Error(t, fifth.Handshake(), "a fifth TLS handshake is refused")
		assert.Equal(t, uint64(1), s.Stats().RefusedHandshakeLimit)

		time.Sleep(time.Until(start.Add(timeout)) - time.Nanosecond)
		synctest.Wait()
		assert.Equal(t, 4, s.Stats().Handshakes, "a stalled handshake was ended before the timeout")
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		assert.Zero(t, s.Stats().Handshakes, "the stalled handshakes outlived the timeout")
		assert.Zero(t, s.Stats().Connections)
	})
}

// TestTLSAndAuthentication: a TLS client with a certificate, an
// authenticator that reads the payload, the identity visible to handlers;
// a refused token gets Unauthenticated and the connection closes.
func TestTLSAndAuthentication(t *testing.T) {
	pki := newTestPKI(t)
	auth := server.AuthenticatorFunc(func(_ context.Context, info server.AuthInfo) (string, error) {
		if info.TLS == nil || len(info.TLS.PeerCertificates) == 0 {
			return "", status.New(protocol.CodePermissionDenied, "no client certificate")
		}
		if string(info.Payload) != "secret" {
			return "", status.New(protocol.CodeUnauthenticated, "bad token")
		}
		return info.TLS.PeerCertificates[0].Subject.CommonName, nil
	})
	s := startServer(t, server.Options{TLS: pki.serverConfig(true), Authenticator: auth})

	tc, err := tls.Dial("tcp", s.addr, pki.clientConfig(pki.clientCert))
	require.NoError(t, err)
	c := &rawClient{t: t, nc: tc, rd: protocol.NewReader(tc, protocol.DefaultLimits())}
	t.Cleanup(func() { _ = tc.Close() })
	c.handshake([]byte("secret"))
	assert.Equal(t, "test-client", string(c.call("echo", "Peer", nil).body))

	tc2, err := tls.Dial("tcp", s.addr, pki.clientConfig(pki.clientCert))
	require.NoError(t, err)
	t.Cleanup(func() { _ = tc2.Close() })
	bad := &rawClient{t: t, nc: tc2, rd: protocol.NewReader(tc2, protocol.DefaultLimits())}
	frame, err := protocol.AppendHandshake(nil, &protocol.Handshake{Version: protocol.Version, MaxFrameSize: 1 << 20, Auth: []byte("wrong")})
	require.NoError(t, err)
	bad.write(frame)
	e := bad.expectClosed()
	require.NotNil(t, e)
	assert.Equal(t, protocol.CodeUnauthenticated, e.Code)
	assert.Equal(t, "bad token", e.Message)
	assert.Equal(t, uint64(1), s.Stats().AuthenticationFailures)

	// Without a client certificate: PermissionDenied.
	tc3, err := tls.Dial("tcp", s.addr, pki.clientConfig(nil))
	if err == nil { // TLS 1.3 reports a missing certificate after the handshake
		t.Cleanup(func() { _ = tc3.Close() })
		nocert := &rawClient{t: t, nc: tc3, rd: protocol.NewReader(tc3, protocol.DefaultLimits())}
		nocert.write(frame)
		if e := nocert.expectClosed(); e != nil {
			assert.Equal(t, protocol.CodePermissionDenied, e.Code)
		}
	}
}

// TestUnsupportedVersion: a client of another protocol version gets
// FailedPrecondition and the close.
func TestUnsupportedVersion(t *testing.T) {
	s := startServer(t, server.Options{})
	c := dialNoHandshake(t, s.addr)
	frame, err := protocol.AppendHandshake(nil, &protocol.Handshake{Version: protocol.Version, MaxFrameSize: 1 << 20})
	require.NoError(t, err)
	frame[protocol.HeaderSize] = 9 // the version's low byte
	c.write(frame)
	e := c.expectClosed()
	require.NotNil(t, e)
	assert.Equal(t, protocol.CodeFailedPrecondition, e.Code)
}

// TestRandomFramesNeverPanicTheServer: garbage after a valid handshake
// closes that connection (with a connection Error when the header was
// readable) and never disturbs the server or other connections.
func TestRandomFramesNeverPanicTheServer(t *testing.T) {
	s := startServer(t, server.Options{})
	good := dialRaw(t, s.addr)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 200 {
		c := dialRaw(t, s.addr)
		junk := make([]byte, 1+rng.IntN(64))
		for j := range junk {
			junk[j] = byte(rng.Uint32())
		}
		if i%2 == 0 && len(junk) >= protocol.HeaderSize {
			junk[0] = protocol.Magic // get past the magic check more often
		}
		c.write(junk)
		_ = c.nc.(*net.TCPConn).CloseWrite()
		c.expectClosed()
	}
	assert.Equal(t, "alive", string(good.call("echo", "Say", []byte("alive")).body))
	require.Eventually(t, func() bool { return s.Stats().Connections == 1 }, 10*time.Second, time.Millisecond)
	assert.Positive(t, s.Stats().ProtocolViolations)
	requireLedgerZero(t, s)
}

// TestViolationsCloseTheConnection: specific violations each get a
// connection Error with Internal and the close.
func TestViolationsCloseTheConnection(t *testing.T) {
	s := startServer(t, server.Options{})
	cases := map[string]func(c *rawClient) []byte{
		"id not increasing": func(c *rawClient) []byte {
			c.call("echo", "Say", nil)
			f, _ := protocol.AppendRequest(nil, 1, &protocol.Request{})
			return f
		},
		"a second handshake": func(*rawClient) []byte {
			f, _ := protocol.AppendHandshake(nil, &protocol.Handshake{Version: protocol.Version, MaxFrameSize: 1 << 20})
			return f
		},
		"a response from the client": func(*rawClient) []byte {
			f, _ := protocol.AppendResponse(nil, 5, &protocol.Response{})
			return f
		},
		"bad magic": func(*rawClient) []byte { return make([]byte, protocol.HeaderSize) },
	}
	for name, frame := range cases {
		t.Run(name, func(t *testing.T) {
			c := dialRaw(t, s.addr)
			c.write(frame(c))
			e := c.expectClosed()
			require.NotNil(t, e)
			assert.Equal(t, protocol.CodeInternal, e.Code)
			assert.Contains(t, e.Message, "protocol violation")
		})
	}
}

// TestKeepalive: the server answers pings, pings a silent client, and
// closes a client that does not answer. On synctest's clock: the test's
// own steps take no time, so the server's pings come exactly when the
// keepalive says, never because the test was slow.
func TestKeepalive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := startPipeServer(t, server.Options{KeepaliveInterval: 100 * time.Millisecond, IdleTimeout: -1})
		c := s.dialRaw(t)
		c.write(protocol.AppendPing(nil, [8]byte{1, 2, 3}))
		h, payload := c.read()
		require.Equal(t, protocol.FramePong, h.Type)
		data, err := protocol.ParsePing(h, payload)
		require.NoError(t, err)
		assert.Equal(t, [8]byte{1, 2, 3}, data)

		// Silent: the server pings; answering keeps the connection.
		h, payload = c.read()
		require.Equal(t, protocol.FramePing, h.Type)
		data, _ = protocol.ParsePing(h, payload)
		c.write(protocol.AppendPong(nil, data))
		assert.Equal(t, "ok", string(c.call("echo", "Say", []byte("ok")).body))

		// Not answering: the server closes.
		c.expectClosed()
		synctest.Wait()
		assert.Zero(t, s.Stats().Connections)
	})
}

// TestIdleTimeout: a connection without calls is closed with a GoAway
// after the idle timeout, even though it answers pings (on synctest's
// clock, so that the call is made before the timeout however slow the
// machine).
func TestIdleTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := startPipeServer(t, server.Options{IdleTimeout: 200 * time.Millisecond, KeepaliveInterval: -1})
		c := s.dialRaw(t)
		assert.Equal(t, "ok", string(c.call("echo", "Say", []byte("ok")).body))
		h, payload := c.read()
		require.Equal(t, protocol.FrameGoAway, h.Type)
		var g protocol.GoAway
		require.NoError(t, protocol.ParseGoAway(h, payload, &g))
		assert.Equal(t, uint64(1), g.LastID)
		assert.Equal(t, "idle timeout", g.Message)
		c.expectClosed()
	})
}

// TestStopDrainsGracefully: Stop sends GoAway with the last accepted id,
// lets the call in flight finish, answers new requests Unavailable, and
// closes once nothing is in flight.
func TestStopDrainsGracefully(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := startPipeServer(t, server.Options{})
		c := s.dialRaw(t)
		held := c.send("echo", "Hold", nil, nil)
		<-s.mux.entered
		stopped := make(chan error, 1)
		go func() { stopped <- s.Stop(context.Background()) }()

		h, payload := c.read()
		require.Equal(t, protocol.FrameGoAway, h.Type)
		var g protocol.GoAway
		require.NoError(t, protocol.ParseGoAway(h, payload, &g))
		assert.Equal(t, held, g.LastID)

		r := c.call("echo", "Say", nil)
		require.NotNil(t, r.err)
		assert.Equal(t, protocol.CodeUnavailable, r.err.Code)

		synctest.Wait() // Stop waits, for the call in flight only
		select {
		case <-stopped:
			t.Fatal("Stop returned with a call in flight")
		default:
		}
		close(s.mux.block)
		assert.NoError(t, <-s.mux.ctxErr, "the call in flight was not cancelled")
		assert.Equal(t, held, c.next().id)
		c.expectClosed()
		require.NoError(t, <-stopped)
		_, err := s.net.Dial(context.Background(), s.addr)
		assert.Error(t, err, "the listener is closed")
	})
}

// TestCloseCancelsCalls: Close ends every call's context at once.
func TestCloseCancelsCalls(t *testing.T) {
	s := startServer(t, server.Options{})
	c := dialRaw(t, s.addr)
	c.send("echo", "Hold", nil, nil)
	<-s.mux.entered
	require.NoError(t, s.Close())
	assert.ErrorIs(t, <-s.mux.ctxErr, context.Canceled)
	c.expectClosed()
}
