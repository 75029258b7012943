package servertest_test

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/server/servertest"
)

func TestPKIHandshake(t *testing.T) {
	pki := servertest.NewPKI(t, "test-ca")
	l, err := tls.Listen("tcp", "127.0.0.1:0", pki.ServerConfig(t, true))
	require.NoError(t, err)
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_ = c.(*tls.Conn).Handshake()
			_, _ = c.Write([]byte("x"))
			_ = c.Close()
		}
	}()
	cert := pki.Issue(t, "client")
	c, err := tls.Dial("tcp", l.Addr().String(), pki.ClientConfig(&cert))
	require.NoError(t, err)
	defer c.Close()
	buf := make([]byte, 1)
	_, err = c.Read(buf)
	require.NoError(t, err)

	other := servertest.NewPKI(t, "other-ca")
	_, err = tls.Dial("tcp", l.Addr().String(), other.ClientConfig(nil))
	var unknown x509.UnknownAuthorityError
	assert.ErrorAs(t, err, &unknown, "a client of another CA refuses the server")
}

func TestWritePEM(t *testing.T) {
	pki := servertest.NewPKI(t, "ca")
	cert := pki.Issue(t, "server")
	ca, certFile, keyFile := pki.WritePEM(t, t.TempDir(), cert)
	loaded, err := tls.LoadX509KeyPair(certFile, keyFile)
	require.NoError(t, err)
	assert.Equal(t, cert.Certificate[0], loaded.Certificate[0])
	pem, err := os.ReadFile(ca)
	require.NoError(t, err)
	assert.True(t, x509.NewCertPool().AppendCertsFromPEM(pem))
}
