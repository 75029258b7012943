// Package servertest helps the tests of sluice servers and clients, and of
// programs built on them: a throwaway PKI for real TLS, as net/http/httptest
// does for HTTP.
package servertest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// PKI is a certificate authority made for one test, valid from an hour
// before it was made to an hour after.
type PKI struct {
	// Pool holds the CA certificate: RootCAs for clients, ClientCAs for
	// servers.
	Pool *x509.CertPool
	ca   *x509.Certificate
	key  *ecdsa.PrivateKey
}

// NewPKI makes a CA named name.
func NewPKI(t testing.TB, name string) *PKI {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("servertest: %v", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatalf("servertest: %v", err)
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatalf("servertest: %v", err)
	}
	p := &PKI{Pool: x509.NewCertPool(), ca: ca, key: key}
	p.Pool.AddCert(ca)
	return p
}

// Issue returns a certificate for cn, valid for 127.0.0.1 and localhost,
// usable by servers and by clients.
func (p *PKI) Issue(t testing.TB, cn string) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("servertest: %v", err)
	}
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		t.Fatalf("servertest: %v", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &key.PublicKey, p.key)
	if err != nil {
		t.Fatalf("servertest: %v", err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// ServerConfig is a TLS 1.2+ server configuration with a certificate for
// "server"; with clientCerts it verifies client certificates signed by the
// CA when a client sends one.
func (p *PKI) ServerConfig(t testing.TB, clientCerts bool) *tls.Config {
	t.Helper()
	c := &tls.Config{Certificates: []tls.Certificate{p.Issue(t, "server")}, MinVersion: tls.VersionTLS12}
	if clientCerts {
		c.ClientAuth, c.ClientCAs = tls.VerifyClientCertIfGiven, p.Pool
	}
	return c
}

// ClientConfig is a TLS 1.2+ client configuration trusting the CA, with
// cert as the client certificate when not nil.
func (p *PKI) ClientConfig(cert *tls.Certificate) *tls.Config {
	c := &tls.Config{RootCAs: p.Pool, MinVersion: tls.VersionTLS12}
	if cert != nil {
		c.Certificates = []tls.Certificate{*cert}
	}
	return c
}

// WritePEM writes the CA certificate and cert with its ECDSA key as PEM
// files in dir and returns their paths.
func (p *PKI) WritePEM(t testing.TB, dir string, cert tls.Certificate) (caFile, certFile, keyFile string) {
	t.Helper()
	keyDER, err := x509.MarshalECPrivateKey(cert.PrivateKey.(*ecdsa.PrivateKey))
	if err != nil {
		t.Fatalf("servertest: %v", err)
	}
	write := func(name, typ string, der []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatalf("servertest: %v", err)
		}
		return path
	}
	return write("ca.pem", "CERTIFICATE", p.ca.Raw), write("cert.pem", "CERTIFICATE", cert.Certificate[0]), write("key.pem", "EC PRIVATE KEY", keyDER)
}
