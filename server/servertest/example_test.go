package servertest_test

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"

	"github.com/sluicerpc/sluice/server/servertest"
)

// A Network's listener goes to server.Server.Serve and its Dial to a
// client's Options.Dialer; inside a testing/synctest bubble their waits
// then run on the bubble's fake clock. Here, the connection itself.
func ExampleNetwork() {
	n := servertest.NewNetwork()
	l, err := n.Listen("") // a new address
	if err != nil {
		panic(err)
	}
	defer l.Close()
	fmt.Println(l.Addr())

	_, err = n.Dial(context.Background(), "pipe-9") // nobody listens there
	fmt.Println(errors.Is(err, syscall.ECONNREFUSED))

	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			panic(err)
		}
		accepted <- c
	}()
	c, err := n.Dial(context.Background(), l.Addr().String())
	if err != nil {
		panic(err)
	}
	s := <-accepted
	go func() { _, _ = s.Write([]byte("hello")); _ = s.Close() }()
	b, err := io.ReadAll(c)
	fmt.Println(string(b), err)
	_ = c.Close()
	// Output:
	// pipe-1
	// true
	// hello <nil>
}

// A test's PKI gives the server and the client real TLS configurations,
// with client certificates. Compile-only: NewPKI and Issue take the test's
// testing.TB, which an example does not have.
func ExampleNewPKI() {
	testMutualTLS := func(t *testing.T) {
		pki := servertest.NewPKI(t, "test-ca")
		serverTLS := pki.ServerConfig(t, true) // server.Options.TLS
		cert := pki.Issue(t, "client-1")
		clientTLS := pki.ClientConfig(&cert) // the client's TLS configuration
		_, _ = serverTLS, clientTLS

		// For programs that read PEM files (sluice serve's flags):
		caFile, certFile, keyFile := pki.WritePEM(t, t.TempDir(), cert)
		if _, err := tls.LoadX509KeyPair(certFile, keyFile); err != nil {
			t.Fatal(err, caFile)
		}
	}
	_ = testMutualTLS
}
