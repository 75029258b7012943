package server_test

import (
	"crypto/tls"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/server"
)

// dialFrom connects to addr from the loopback address 127.0.0.<host>
// (Linux routes all of 127.0.0.0/8 to lo), so that a test has several
// source addresses; the connection is closed when the test ends.
func dialFrom(t testing.TB, host byte, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, host)}, Timeout: 10 * time.Second}
	nc, err := d.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = nc.Close() })
	return nc
}

// acceptedAll waits (as a hang guard only) until the accept loop has
// admitted or refused n connections, and returns the server's Stats.
func acceptedAll(t testing.TB, s *testServer, n uint64) server.Stats {
	t.Helper()
	handled := func(st server.Stats) uint64 {
		return st.ConnectionsAdmitted + st.RefusedConnectionLimit + st.RefusedHandshakeLimit + st.RefusedHandshakePerAddress
	}
	require.Eventually(t, func() bool { return handled(s.Stats()) >= n }, 30*time.Second, time.Millisecond)
	st := s.Stats()
	require.Equal(t, n, handled(st), "connections handled by the accept loop")
	return st
}

// callFrom connects from 127.0.0.<host>, completes the handshake and a
// call, and closes the connection.
func callFrom(t *testing.T, host byte, addr string, wrap func(net.Conn) net.Conn) {
	t.Helper()
	nc := dialFrom(t, host, addr)
	if wrap != nil {
		nc = wrap(nc)
	}
	c := newRawClient(t, nc)
	c.handshake(nil)
	body := fmt.Sprintf("from 127.0.0.%d", host)
	assert.Equal(t, body, string(c.call("echo", "Say", []byte(body)).body))
	_ = nc.Close()
}

// TestOneAddressCannotTakeEveryHandshakeSlot: with the default bounds (64
// handshakes, 8 per address), 64 silent sockets from 127.0.0.2 hold 8
// handshake slots; the other 56 are closed right after accept and counted
// as "handshake_per_address". Clients from other addresses connect and
// complete calls meanwhile, a further socket from 127.0.0.2 is refused,
// and one of its sockets finishing its handshake makes room for exactly
// one more. Without the per-address bound the 64 sockets take every
// handshake slot and the other clients are refused.
func TestOneAddressCannotTakeEveryHandshakeSlot(t *testing.T) {
	s := startServer(t, server.Options{HandshakeTimeout: time.Hour}) // the stall outlives the test
	lim := s.ConnectionLimits()
	require.Equal(t, 64, lim.MaxHandshakes)
	require.Equal(t, 8, lim.MaxHandshakesPerAddress)

	// Dialled one after the other: the server accepts them in this order.
	var stalled []*rawClient
	for range lim.MaxHandshakes {
		stalled = append(stalled, newRawClient(t, dialFrom(t, 2, s.addr)))
	}
	st := acceptedAll(t, s, 64)
	assert.Equal(t, 8, st.Handshakes, "in handshake")
	assert.Equal(t, uint64(8), st.ConnectionsAdmitted)
	assert.Equal(t, uint64(56), st.RefusedHandshakePerAddress)
	assert.Zero(t, st.RefusedHandshakeLimit)

	// Other addresses connect and complete calls, in parallel.
	var wg sync.WaitGroup
	for host := byte(3); host < 7; host++ {
		wg.Go(func() { callFrom(t, host, s.addr, nil) })
	}
	wg.Wait()
	callFrom(t, 1, s.addr, nil)
	for _, c := range stalled[8:] {
		requireRefusedAtAccept(t, c, perAddressRefusal)
	}

	// A further socket from the stalling address is refused and counted.
	refused := newRawClient(t, dialFrom(t, 2, s.addr))
	requireRefusedAtAccept(t, refused, perAddressRefusal)
	st = acceptedAll(t, s, 64+5+1)
	assert.Equal(t, uint64(57), st.RefusedHandshakePerAddress)

	// A stalled socket that completes its handshake gives its address's
	// slot back: one more from 127.0.0.2 is admitted, and the next refused.
	stalled[0].handshake(nil)
	callFrom(t, 2, s.addr, nil) // dialled only after the handshake was answered
	again := newRawClient(t, dialFrom(t, 2, s.addr))
	again2 := newRawClient(t, dialFrom(t, 2, s.addr))
	st = acceptedAll(t, s, 64+5+1+3)
	assert.Equal(t, uint64(58), st.RefusedHandshakePerAddress)
	requireRefusedAtAccept(t, again2, perAddressRefusal)
	assert.Equal(t, "still", string(stalled[0].call("echo", "Say", []byte("still")).body))

	// Everything closed: every slot comes back.
	for _, c := range append(stalled[:8], again) {
		_ = c.nc.Close()
	}
	_ = stalled[0].nc.Close()
	require.Eventually(t, func() bool {
		st := s.Stats()
		return st.Connections == 0 && st.Handshakes == 0
	}, 30*time.Second, time.Millisecond, "%+v", s.Stats())
}

// TestStalledTLSHellosFromOneAddress: against a TLS server, 64 stalled
// ClientHellos from 127.0.0.2 hold 8 handshake slots; TLS clients from
// other addresses complete their handshakes and calls, and a further
// stalled hello from 127.0.0.2 is refused (its TLS handshake fails on the
// closed connection) and counted.
func TestStalledTLSHellosFromOneAddress(t *testing.T) {
	pki := newTestPKI(t)
	s := startServer(t, server.Options{TLS: pki.serverConfig(false), HandshakeTimeout: time.Hour})
	halfHello := []byte{0x16, 0x03, 0x01, 0x02, 0x00, 0x01} // a record header promising more bytes
	for range 64 {
		nc := dialFrom(t, 2, s.addr)
		_, _ = nc.Write(halfHello) // a refused one may be closed already
	}
	st := acceptedAll(t, s, 64)
	assert.Equal(t, 8, st.Handshakes)
	assert.Equal(t, uint64(56), st.RefusedHandshakePerAddress)

	tlsClient := func(nc net.Conn) net.Conn {
		cfg := pki.clientConfig(nil)
		cfg.ServerName = "127.0.0.1"
		return tls.Client(nc, cfg)
	}
	var wg sync.WaitGroup
	for host := byte(3); host < 7; host++ {
		wg.Go(func() { callFrom(t, host, s.addr, tlsClient) })
	}
	wg.Wait()

	fresh := tlsClient(dialFrom(t, 2, s.addr)).(*tls.Conn)
	_ = fresh.SetDeadline(time.Now().Add(10 * time.Second)) // a hang guard
	err := fresh.Handshake()
	require.Error(t, err, "a further TLS handshake from the stalling address is refused")
	var ne net.Error
	assert.False(t, asNetErr(err, &ne) && ne.Timeout(), "refused, not timed out: %v", err)
	st = acceptedAll(t, s, 64+4+1)
	assert.Equal(t, uint64(57), st.RefusedHandshakePerAddress)
	assert.Equal(t, 8, st.Handshakes)
}

// Connections without an IP address (here net.Pipe, as Unix sockets) are
// bounded by MaxHandshakes only.
func TestPipeConnectionsBoundedByMaxHandshakesOnly(t *testing.T) {
	s := startPipeServer(t, server.Options{
		Connections:      server.ConnectionLimits{MaxConnections: 10, MaxHandshakes: 4, MaxHandshakesPerAddress: 1},
		HandshakeTimeout: time.Hour,
	})
	for range 4 {
		s.dialNoHandshake(t)
	}
	c := s.dialNoHandshake(t)
	requireRefusedAtAccept(t, c, "the server is at its limit of connections in handshake")
	st := s.Stats()
	assert.Equal(t, 4, st.Handshakes)
	assert.Equal(t, uint64(1), st.RefusedHandshakeLimit)
	assert.Zero(t, st.RefusedHandshakePerAddress)
}
