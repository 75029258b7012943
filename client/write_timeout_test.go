package client_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/client"
	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/protocol/status"
)

// startDeafServer answers the handshake (1 MiB frames, method svc/M) on
// its first connection and then never reads again, as a hung server does.
// Later connections are closed at once: a call that starts after the first
// connection died must not find a fresh deaf connection whose socket
// buffers take its whole request, and wait for an answer forever (a call
// without a deadline to a server that never answers waits, rightly).
func startDeafServer(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	accepted := make(chan net.Conn, 16)
	go func() {
		first := true
		for {
			nc, err := l.Accept()
			if err != nil {
				close(accepted)
				return
			}
			if first {
				first = false
			} else {
				_ = nc.Close()
				continue
			}
			rd := protocol.NewReader(nc, protocol.DefaultLimits())
			if h, _, err := rd.ReadFrame(); err == nil && h.Type == protocol.FrameHandshake {
				ack, _ := protocol.AppendHandshakeAck(nil, &protocol.HandshakeAck{
					Version: protocol.Version, Capabilities: protocol.CapCancel | protocol.CapOneWay,
					MaxFrameSize: 1 << 20, MaxMetadataBytes: 1024,
					Services: []protocol.ServiceInfo{{Name: "svc", Methods: []string{"M"}}},
				})
				_, _ = nc.Write(ack)
			}
			accepted <- nc // kept open, never read
		}
	}()
	t.Cleanup(func() {
		_ = l.Close()
		for nc := range accepted {
			_ = nc.Close()
		}
	})
	return l.Addr().String()
}

// A server that stops reading cannot hold the client's calls forever: once
// the connection's writes make no progress for the write timeout, the
// connection is closed and every call on it fails with Unavailable, even
// calls without a deadline blocked waiting for buffer space (calls with
// one return at it: TestEveryWaitToSendEndsWithTheCallersContext). Before,
// they waited forever.
func TestAServerThatStopsReadingFailsTheCallsAfterTheWriteTimeout(t *testing.T) {
	addr := startDeafServer(t)
	c, err := client.Dial(context.Background(), []string{addr}, client.Options{WriteTimeout: 200 * time.Millisecond, MaxAttempts: 1})
	require.NoError(t, err)
	defer func() { _ = c.Close() }()

	// 40 calls of 1 MiB: far more than the socket buffers take while
	// the server does not read.
	const n = 40
	body := make([]byte, 1<<20-64)
	errs := make(chan error, n)
	for range n {
		go func() {
			_, err := c.CallRaw(context.Background(), "svc/M", body)
			errs <- err
		}()
	}
	guard := time.After(60 * time.Second)
	for range n {
		select {
		case err := <-errs:
			require.Error(t, err)
			assert.Equal(t, protocol.CodeUnavailable, status.Code(err), "%v", err)
		case <-guard:
			t.Fatal("calls still blocked a minute after the server stopped reading")
		}
	}
}
