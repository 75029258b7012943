package server_test

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/protocol/status"
	"github.com/sluicerpc/sluice/server"
	"github.com/sluicerpc/sluice/server/servertest"
)

// Every way a handshake fails gives back the connection slot and the
// handshake slot it took at Accept. Each case runs on a server that admits
// one connection at a time (MaxConnections = MaxHandshakes = 1), so a slot
// that was not given back would also lock every later client out: after
// the failure the test waits for both counts to reach zero, then connects
// a good client over the same server.

// slotTokens are the authentication payloads of the slot tests' clients.
const (
	goodToken   = "good"
	deniedToken = "denied" // PermissionDenied
	panicToken  = "panic"  // the authenticator panics
)

// slotAuthenticator accepts goodToken and refuses every other payload.
var slotAuthenticator = server.AuthenticatorFunc(func(_ context.Context, info server.AuthInfo) (string, error) {
	switch string(info.Payload) {
	case goodToken:
		return "good-client", nil
	case deniedToken:
		return "", status.New(protocol.CodePermissionDenied, "denied by policy")
	case panicToken:
		panic("authenticator failure")
	}
	return "", errors.New("unknown token")
})

// handshakeFrame is a Handshake of this protocol version with auth.
func handshakeFrame(t *testing.T, auth string) []byte {
	t.Helper()
	f, err := protocol.AppendHandshake(nil, &protocol.Handshake{Version: protocol.Version, MaxFrameSize: 1 << 20, Auth: []byte(auth)})
	require.NoError(t, err)
	return f
}

// requireSlotsZero waits until no connection slot and no handshake slot is
// held. Once the server has closed a connection nothing can take its slots
// again, so the condition, once reached, holds; the timeout is a hang
// guard.
func requireSlotsZero(t *testing.T, s *server.Server) {
	t.Helper()
	require.Eventually(t, func() bool {
		st := s.Stats()
		return st.Connections == 0 && st.Handshakes == 0
	}, 30*time.Second, time.Millisecond, "slots still held: %+v", s.Stats())
}

// dialTLS connects with cfg and runs the TLS handshake; the error is the
// TLS handshake's, nil when it completed from the client's side.
func dialTLS(t *testing.T, addr string, cfg *tls.Config) (*rawClient, error) {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 10*time.Second)
	require.NoError(t, err)
	cfg = cfg.Clone()
	cfg.ServerName = "127.0.0.1"
	tc := tls.Client(nc, cfg)
	c := newRawClient(t, tc)
	_ = tc.SetDeadline(time.Now().Add(10 * time.Second))
	err = tc.HandshakeContext(context.Background())
	_ = tc.SetDeadline(time.Time{})
	return c, err
}

// requireRefusedTLS checks a TLS handshake the server refuses: the client
// sees the failure either in its own handshake or, with TLS 1.3 (where a
// client's certificate is checked after the client finished), when it
// reads; never a read timeout.
func requireRefusedTLS(t *testing.T, c *rawClient, hsErr error) {
	t.Helper()
	if hsErr != nil {
		return
	}
	c.write(handshakeFrame(t, goodToken))
	for {
		h, _, err := c.readErr()
		if err != nil {
			var ne net.Error
			require.False(t, errors.As(err, &ne) && ne.Timeout(), "the server did not close the connection: %v", err)
			return
		}
		require.NotEqual(t, protocol.FrameHandshakeAck, h.Type, "the server accepted the handshake")
	}
}

func TestHandshakeFailuresGiveBackTheirSlots(t *testing.T) {
	pki := newTestPKI(t)
	stranger := servertest.NewPKI(t, "stranger-ca") // a CA the server does not trust
	strangerCert := stranger.Issue(t, "stranger")
	required := pki.serverConfig(true)
	required.ClientAuth = tls.RequireAndVerifyClientCert

	type failure struct {
		name string
		tls  *tls.Config // the server's
		// fail makes the failing attempt and checks what the client sees.
		fail func(t *testing.T, addr string)
		// counter is the count that must rise by one besides
		// HandshakeFailures; nil for none.
		counter func(server.Stats) uint64
	}
	authFailures := func(st server.Stats) uint64 { return st.AuthenticationFailures }
	connError := func(t *testing.T, addr, token string) *protocol.ErrorFrame {
		c := dialNoHandshake(t, addr)
		c.write(handshakeFrame(t, token))
		e := c.expectClosed()
		require.NotNil(t, e, "no connection Error before the close")
		return e
	}
	cases := []failure{
		{name: "plaintext client on a TLS server", tls: pki.serverConfig(false), fail: func(t *testing.T, addr string) {
			c := dialNoHandshake(t, addr)
			c.write(handshakeFrame(t, goodToken))
			c.expectClosed() // whatever TLS answers, then the close
		}},
		{name: "client certificate of an untrusted CA", tls: pki.serverConfig(true), fail: func(t *testing.T, addr string) {
			cfg := pki.clientConfig(nil)
			// Certificates would not do: a Go client sends none that the
			// server's acceptable CAs exclude. This one sends it anyway.
			cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &strangerCert, nil }
			c, err := dialTLS(t, addr, cfg)
			requireRefusedTLS(t, c, err)
		}},
		{name: "no client certificate where one is required", tls: required, fail: func(t *testing.T, addr string) {
			c, err := dialTLS(t, addr, pki.clientConfig(nil))
			requireRefusedTLS(t, c, err)
		}},
		{name: "client that does not trust the server", tls: pki.serverConfig(false), fail: func(t *testing.T, addr string) {
			_, err := dialTLS(t, addr, stranger.ClientConfig(nil))
			require.Error(t, err, "the client accepted a certificate of a CA it does not trust")
		}},
		{name: "unsupported protocol version", fail: func(t *testing.T, addr string) {
			c := dialNoHandshake(t, addr)
			f := handshakeFrame(t, goodToken)
			f[protocol.HeaderSize] = 9 // the version's low byte
			c.write(f)
			e := c.expectClosed()
			require.NotNil(t, e)
			assert.Equal(t, protocol.CodeFailedPrecondition, e.Code)
		}},
		{name: "first frame not a Handshake", fail: func(t *testing.T, addr string) {
			c := dialNoHandshake(t, addr)
			c.write(protocol.AppendPing(nil, [8]byte{}))
			e := c.expectClosed()
			require.NotNil(t, e)
			assert.Equal(t, protocol.CodeInternal, e.Code)
		}, counter: func(st server.Stats) uint64 { return st.ProtocolViolations }},
		{name: "authenticator error", fail: func(t *testing.T, addr string) {
			e := connError(t, addr, "wrong")
			assert.Equal(t, protocol.CodeUnauthenticated, e.Code)
			assert.Equal(t, "unknown token", e.Message)
		}, counter: authFailures},
		{name: "authenticator PermissionDenied", fail: func(t *testing.T, addr string) {
			e := connError(t, addr, deniedToken)
			assert.Equal(t, protocol.CodePermissionDenied, e.Code)
			assert.Equal(t, "denied by policy", e.Message)
		}, counter: authFailures},
		{name: "authenticator panic", fail: func(t *testing.T, addr string) {
			e := connError(t, addr, panicToken)
			assert.Equal(t, protocol.CodeUnauthenticated, e.Code)
			assert.Contains(t, e.Message, "authenticator failure")
		}, counter: authFailures},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := startServer(t, server.Options{
				TLS:           tc.tls,
				Authenticator: slotAuthenticator,
				Connections:   server.ConnectionLimits{MaxConnections: 1, MaxHandshakes: 1},
			})
			tc.fail(t, s.addr)
			requireSlotsZero(t, s.Server)
			st := s.Stats()
			assert.Equal(t, uint64(1), st.ConnectionsAdmitted, "the failing client was admitted, then failed")
			assert.Equal(t, uint64(1), st.HandshakeFailures)
			if tc.counter != nil {
				assert.Equal(t, uint64(1), tc.counter(st))
			}
			assert.Zero(t, st.RefusedConnectionLimit+st.RefusedHandshakeLimit)

			// The slots are usable: a good client gets the only one.
			var good *rawClient
			if tc.tls != nil {
				var err error
				good, err = dialTLS(t, s.addr, pki.clientConfig(pki.clientCert))
				require.NoError(t, err)
			} else {
				good = dialNoHandshake(t, s.addr)
			}
			good.handshake([]byte(goodToken))
			assert.Equal(t, "good-client", string(good.call("echo", "Peer", nil).body))
			require.NoError(t, good.nc.Close())
			requireSlotsZero(t, s.Server)
			assert.Zero(t, s.Stats().RefusedConnectionLimit+s.Stats().RefusedHandshakeLimit)
		})
	}
}
