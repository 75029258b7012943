package client_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/client"
	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/protocol/status"
	"github.com/sluicerpc/sluice/server"
)

// testCA is a certificate authority made for one test.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

func newCA(t testing.TB, name string) *testCA {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &testCA{cert: cert, key: key, pool: pool}
}

// issue returns a leaf certificate for cn, valid for 127.0.0.1 and
// localhost, usable by servers and clients.
func (ca *testCA) issue(t testing.TB, cn string) tls.Certificate {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:     []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	require.NoError(t, err)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

func TestTLSRoundTrip(t *testing.T) {
	ca := newCA(t, "test CA")
	ts := startServer(t, echoMux(nil), server.Options{TLS: &tls.Config{
		Certificates: []tls.Certificate{ca.issue(t, "server")},
		MinVersion:   tls.VersionTLS12,
	}}, "")
	c := dial(t, client.Options{TLS: &tls.Config{RootCAs: ca.pool, MinVersion: tls.VersionTLS12}}, ts.addr)
	out, err := c.CallRaw(ctxTimeout(t, 5*time.Second), "echo/Echo", []byte("secret"))
	require.NoError(t, err)
	require.Equal(t, "secret", string(out))
}

func TestTLSClientCertificate(t *testing.T) {
	ca := newCA(t, "test CA")
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
		Certificates: []tls.Certificate{ca.issue(t, "server")},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    ca.pool,
	}}, "")

	c := dial(t, client.Options{TLS: &tls.Config{RootCAs: ca.pool, Certificates: []tls.Certificate{ca.issue(t, "alice")}}}, ts.addr)
	_, err := c.CallRaw(ctxTimeout(t, 5*time.Second), "who/Am", nil)
	require.NoError(t, err)
	require.Equal(t, "alice", recv(t, peers))

	// Without a client certificate the server ends the handshake.
	_, err = client.Dial(ctxTimeout(t, 5*time.Second), []string{ts.addr}, client.Options{TLS: &tls.Config{RootCAs: ca.pool}})
	require.Error(t, err)
	t.Logf("without a client certificate: %v", err)
}

func TestTLSWrongCAFailsClearly(t *testing.T) {
	ca, other := newCA(t, "test CA"), newCA(t, "other CA")
	ts := startServer(t, echoMux(nil), server.Options{TLS: &tls.Config{Certificates: []tls.Certificate{ca.issue(t, "server")}}}, "")

	_, err := client.Dial(ctxTimeout(t, 5*time.Second), []string{ts.addr}, client.Options{TLS: &tls.Config{RootCAs: other.pool}})
	require.Error(t, err)
	var unknownAuthority x509.UnknownAuthorityError
	require.ErrorAs(t, err, &unknownAuthority)
	require.Contains(t, err.Error(), "certificate signed by unknown authority")
	require.Contains(t, err.Error(), ts.addr)
	require.Equal(t, protocol.CodeUnavailable, status.Code(err))
}

func TestPlaintextClientAgainstTLSServerFails(t *testing.T) {
	ca := newCA(t, "test CA")
	ts := startServer(t, echoMux(nil), server.Options{TLS: &tls.Config{Certificates: []tls.Certificate{ca.issue(t, "server")}}}, "")
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
	})}, "")

	c := dial(t, client.Options{Auth: []byte("token-42")}, ts.addr)
	_, err := c.CallRaw(ctxTimeout(t, 5*time.Second), "who/Am", nil)
	require.NoError(t, err)
	require.Equal(t, "user-42", recv(t, ids))

	_, err = client.Dial(ctxTimeout(t, 5*time.Second), []string{ts.addr}, client.Options{Auth: []byte("wrong")})
	st := requireCode(t, err, protocol.CodePermissionDenied)
	require.Equal(t, "bad token", st.Message)
}
