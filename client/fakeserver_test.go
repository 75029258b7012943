package client_test

import (
	"net"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/protocol"
)

// fakeServer speaks the server side of the protocol by script, for what a
// real server does not do on demand (a GoAway that leaves a request
// unprocessed, a connection dropped mid-call). Its method table is
// svc/M.
type fakeServer struct {
	addr              string
	l                 net.Listener
	onRequest         func(conn int, id uint64, write func([]byte))
	closeAfterRequest bool

	mu    sync.Mutex
	seen  []uint64
	conns int
	wg    sync.WaitGroup
}

func startFakeServer(t testing.TB, onRequest func(conn int, id uint64, write func([]byte))) *fakeServer {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	fs := &fakeServer{addr: l.Addr().String(), l: l, onRequest: onRequest}
	fs.wg.Go(fs.accept)
	t.Cleanup(func() {
		_ = l.Close()
		fs.wg.Wait()
	})
	return fs
}

func (fs *fakeServer) ids() []uint64 {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return append([]uint64(nil), fs.seen...)
}

func (fs *fakeServer) accept() {
	var open []net.Conn
	defer func() {
		for _, nc := range open {
			_ = nc.Close()
		}
	}()
	for {
		nc, err := fs.l.Accept()
		if err != nil {
			return
		}
		open = append(open, nc)
		fs.mu.Lock()
		n := fs.conns
		fs.conns++
		fs.mu.Unlock()
		fs.wg.Go(func() { fs.serve(n, nc) })
	}
}

func (fs *fakeServer) serve(n int, nc net.Conn) {
	defer nc.Close()
	rd := protocol.NewReader(nc, protocol.DefaultLimits())
	h, _, err := rd.ReadFrame()
	if err != nil || h.Type != protocol.FrameHandshake {
		return
	}
	ack, _ := protocol.AppendHandshakeAck(nil, &protocol.HandshakeAck{
		Version: protocol.Version, Capabilities: protocol.CapCancel | protocol.CapOneWay,
		MaxFrameSize: protocol.MinFrameSize, MaxMetadataBytes: 1024,
		Services: []protocol.ServiceInfo{{Name: "svc", Methods: []string{"M"}}},
	})
	if _, err := nc.Write(ack); err != nil {
		return
	}
	write := func(f []byte) { _, _ = nc.Write(f) }
	for {
		h, _, err := rd.ReadFrame()
		if err != nil {
			return
		}
		if h.Type != protocol.FrameRequest {
			continue
		}
		fs.mu.Lock()
		fs.seen = append(fs.seen, h.ID)
		fs.mu.Unlock()
		fs.onRequest(n, h.ID, write)
		if fs.closeAfterRequest {
			return
		}
	}
}
