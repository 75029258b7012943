package server_test

import (
	"crypto/tls"
	"testing"

	"github.com/sluicerpc/sluice/server/servertest"
)

// testPKI adapts servertest.PKI to the server tests: a server certificate
// and a client certificate for "test-client".
type testPKI struct {
	*servertest.PKI
	t          testing.TB
	clientCert *tls.Certificate
}

func newTestPKI(t testing.TB) *testPKI {
	p := &testPKI{PKI: servertest.NewPKI(t, "test-ca"), t: t}
	cc := p.Issue(t, "test-client")
	p.clientCert = &cc
	return p
}

func (p *testPKI) serverConfig(clientCerts bool) *tls.Config { return p.ServerConfig(p.t, clientCerts) }

func (p *testPKI) clientConfig(cert *tls.Certificate) *tls.Config { return p.ClientConfig(cert) }
