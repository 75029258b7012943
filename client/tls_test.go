package client_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/client"
	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/protocol/status"
	"github.com/sluicerpc/sluice/server"
	"github.com/sluicerpc/sluice/server/servertest"
)

func TestTLSRoundTrip(t *testing.T) {
	ca := servertest.NewPKI(t, "test CA")
	ts := startServer(t, echoMux(nil), server.Options{TLS: &tls.Config{
		Certificates: []tls.Certificate{ca.Issue(t, "server")},
		MinVersion:   tls.VersionTLS12,
	}})
	c := dial(t, client.Options{TLS: &tls.Config{RootCAs: ca.Pool, MinVersion: tls.VersionTLS12}}, ts.addr)
	out, err := c.CallRaw(ctxTimeout(t, 5*time.Second), "echo/Echo", []byte("secret"))
	require.NoError(t, err)
	require.Equal(t, "secret", string(out))
}

func TestTLSClientCertificate(t *testing.T) {
	ca := servertest.NewPKI(t, "test CA")
	peers := make(chan string, 1)
	mux := echoMux(map[string]server.RawHandler{
		"who/Am": func(ctx context.Context, _ []byte) ([]byte, error) {
			p, ok := server.PeerFromContext(ctx)
			if !ok || p.TLS == nil || len(p.TLS.PeerCertificates) == 0 {
				return nil, status.New(protocol.CodeUnauthenticated, "no client certificate")
			}
			peers <- p.TLS.PeerCertificates[0].Subject.CommonName
			return nil, nil
		},
	})
	ts := startServer(t, mux, server.Options{TLS: &tls.Config{
		Certificates: []tls.Certificate{ca.Issue(t, "server")},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    ca.Pool,
	}})

	c := dial(t, client.Options{TLS: &tls.Config{RootCAs: ca.Pool, Certificates: []tls.Certificate{ca.Issue(t, "alice")}}}, ts.addr)
	_, err := c.CallRaw(ctxTimeout(t, 5*time.Second), "who/Am", nil)
	require.NoError(t, err)
	require.Equal(t, "alice", recv(t, peers))

	// Without a client certificate the server ends the handshake.
	_, err = client.Dial(ctxTimeout(t, 5*time.Second), []string{ts.addr}, client.Options{TLS: &tls.Config{RootCAs: ca.Pool}})
	require.Error(t, err)
	t.Logf("without a client certificate: %v", err)
}

func TestTLSWrongCAFailsClearly(t *testing.T) {
	ca, other := servertest.NewPKI(t, "test CA"), servertest.NewPKI(t, "other CA")
	ts := startServer(t, echoMux(nil), server.Options{TLS: &tls.Config{Certificates: []tls.Certificate{ca.Issue(t, "server")}}})

	_, err := client.Dial(ctxTimeout(t, 5*time.Second), []string{ts.addr}, client.Options{TLS: &tls.Config{RootCAs: other.Pool}})
	require.Error(t, err)
	var unknownAuthority x509.UnknownAuthorityError
	require.ErrorAs(t, err, &unknownAuthority)
	require.Contains(t, err.Error(), "certificate signed by unknown authority")
	require.Contains(t, err.Error(), ts.addr)
	require.Equal(t, protocol.CodeUnavailable, status.Code(err))
}

func TestPlaintextClientAgainstTLSServerFails(t *testing.T) {
	ca := servertest.NewPKI(t, "test CA")
	ts := startServer(t, echoMux(nil), server.Options{TLS: &tls.Config{Certificates: []tls.Certificate{ca.Issue(t, "server")}}})
	_, err := client.Dial(ctxTimeout(t, 5*time.Second), []string{ts.addr}, client.Options{DialTimeout: time.Second})
	require.Error(t, err)
}

func TestAuthPayload(t *testing.T) {
	ids := make(chan string, 1)
	mux := echoMux(map[string]server.RawHandler{
		"who/Am": func(ctx context.Context, _ []byte) ([]byte, error) {
			p, _ := server.PeerFromContext(ctx)
			ids <- p.Identity
			return nil, nil
		},
	})
	ts := startServer(t, mux, server.Options{Authenticator: server.AuthenticatorFunc(func(_ context.Context, info server.AuthInfo) (string, error) {
		if string(info.Payload) != "token-42" {
			return "", status.New(protocol.CodePermissionDenied, "bad token")
		}
		return "user-42", nil
	})})

	c := dial(t, client.Options{Auth: []byte("token-42")}, ts.addr)
	_, err := c.CallRaw(ctxTimeout(t, 5*time.Second), "who/Am", nil)
	require.NoError(t, err)
	require.Equal(t, "user-42", recv(t, ids))

	_, err = client.Dial(ctxTimeout(t, 5*time.Second), []string{ts.addr}, client.Options{Auth: []byte("wrong")})
	st := requireCode(t, err, protocol.CodePermissionDenied)
	require.Equal(t, "bad token", st.Message)
}
