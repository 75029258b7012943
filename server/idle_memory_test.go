package server_test

import (
	"crypto/tls"
	"io"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/server"
	"github.com/sluicerpc/sluice/server/servertest"
)

// An idle, handshaken connection costs the server at most 16 KiB of heap
// and 2 goroutines (its reader and its writer's flusher), also after it
// carried a call: the writer's batch buffers and the reader's payload
// buffer go back to their pools when the connection goes quiet. (Before:
// 1,100 idle connections held 170 MB, about 166 KiB each.) The figure
// includes the test's own side of each connection (a socket and a few
// bytes), so the server's share is smaller still.
func TestIdleConnectionCostsAtMost16KiB(t *testing.T) {
	t.Run("TCP", func(t *testing.T) { idleConnectionCost(t, 500, nil, 16<<10) })
	// Over TLS, crypto/tls keeps its record buffers (the input record
	// of up to 16 KiB plus overhead, and the output one) for the
	// connection's life: that cost is Go's, measured and bounded here so
	// that it cannot grow unnoticed.
	pki := servertest.NewPKI(t, "idle-ca")
	t.Run("TLS", func(t *testing.T) { idleConnectionCost(t, 200, pki, 48<<10) })
}

func idleConnectionCost(t *testing.T, n int, pki *servertest.PKI, bound int) {
	// A goroutine or two of the runtime or the test (the finalizer
	// goroutine after a GC, say) may come and go; a third goroutine per
	// connection would add n.
	const slack = 4
	o := server.Options{
		KeepaliveInterval: -1, IdleTimeout: -1,
		Connections: server.ConnectionLimits{MaxConnections: 2 * n},
	}
	var clientTLS *tls.Config
	if pki != nil {
		o.TLS = pki.ServerConfig(t, false)
		clientTLS = pki.ClientConfig(nil)
		clientTLS.ServerName = "localhost"
	}
	s := startServer(t, o)
	dial := func() net.Conn {
		nc, err := net.Dial("tcp", s.addr)
		require.NoError(t, err)
		if clientTLS != nil {
			tc := tls.Client(nc, clientTLS)
			require.NoError(t, tc.Handshake())
			return tc
		}
		return nc
	}
	// The client side reads with fixed small buffers, so that what is
	// measured is the server's.
	hs, err := protocol.AppendHandshake(nil, &protocol.Handshake{Version: protocol.Version, MaxFrameSize: 1 << 20})
	require.NoError(t, err)
	probe := newRawClient(t, dial())
	probe.handshake(nil)
	si, mi := probe.method("echo", "Say")
	req, err := protocol.AppendRequest(nil, 1, &protocol.Request{Service: si, Method: mi, Body: make([]byte, 8<<10)})
	require.NoError(t, err)
	buf := make([]byte, 64<<10)
	readFrame := func(nc net.Conn) protocol.FrameType {
		_ = nc.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, err := io.ReadFull(nc, buf[:protocol.HeaderSize])
		require.NoError(t, err)
		h, err := protocol.ParseHeader(buf[:protocol.HeaderSize], uint32(len(buf)))
		require.NoError(t, err)
		_, err = io.ReadFull(nc, buf[:h.Length])
		require.NoError(t, err)
		return h.Type
	}

	conns := make([]net.Conn, 0, n)
	t.Cleanup(func() {
		for _, nc := range conns {
			_ = nc.Close()
		}
	})
	baseG, baseHeap := runtime.NumGoroutine(), liveHeap()
	for range n {
		nc := dial()
		conns = append(conns, nc)
		_, err = nc.Write(hs)
		require.NoError(t, err)
		require.Equal(t, protocol.FrameHandshakeAck, readFrame(nc))
		// One call of 8 KiB each way: the payload buffer and the batch
		// buffers are used, then the connection goes quiet.
		_, err = nc.Write(req)
		require.NoError(t, err)
		require.Equal(t, protocol.FrameResponse, readFrame(nc))
	}
	require.Equal(t, n+1, s.Stats().Connections)
	// The calls' goroutines end just after their answers are written.
	// (Polled here: require.Eventually runs goroutines of its own.)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if s.Stats().ServerCalls.Active == 0 && runtime.NumGoroutine()-baseG <= 2*n+slack {
			break
		}
	}

	perConnHeap := float64(liveHeap()-baseHeap) / float64(n)
	extraG := runtime.NumGoroutine() - baseG
	t.Logf("%d idle connections: %.0f bytes of heap each; %d goroutines more than before", n, perConnHeap, extraG)
	assert.LessOrEqual(t, perConnHeap, float64(bound), "heap per idle connection")
	if !assert.LessOrEqual(t, extraG, 2*n+slack, "goroutines: more than 2 per idle connection") {
		for _, g := range goroutineStacks() {
			if !strings.Contains(g, "(*conn).serve") && !strings.Contains(g, "(*Writer).flush") {
				t.Log(g)
			}
		}
	}
}
