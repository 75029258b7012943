package client_test

import (
	"errors"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/protocol"
)

// streamPeer is a scripted server over TCP for streams: it answers the
// handshake (with caps, method table svc/M) and hands each connection to
// the test, which reads and writes frames on it in the order it chooses.
type streamPeer struct {
	addr  string
	conns chan *peerConn
}

// peerConn is one connection of a streamPeer, driven by the test.
type peerConn struct {
	nc net.Conn
	rd *protocol.Reader
}

const streamCaps = protocol.CapCancel | protocol.CapStreaming

func startStreamPeer(t testing.TB, caps protocol.Capabilities) *streamPeer {
	return startStreamPeerCodecs(t, caps, nil)
}

// startStreamPeerCodecs is startStreamPeer whose ack accepts the codecs
// named in accept (with CapCompression).
func startStreamPeerCodecs(t testing.TB, caps protocol.Capabilities, accept []string) *streamPeer {
	if len(accept) > 0 {
		caps |= protocol.CapCompression
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &streamPeer{addr: l.Addr().String(), conns: make(chan *peerConn, 8)}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var open []net.Conn
	wg.Go(func() {
		for {
			nc, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			open = append(open, nc)
			mu.Unlock()
			rd := protocol.NewReader(nc, protocol.DefaultLimits())
			if h, _, err := rd.ReadFrame(); err != nil || h.Type != protocol.FrameHandshake {
				_ = nc.Close()
				continue
			}
			ack, _ := protocol.AppendHandshakeAck(nil, &protocol.HandshakeAck{
				Version: protocol.Version, Capabilities: caps,
				MaxFrameSize: 1 << 20, MaxMetadataBytes: 1024, Codecs: accept,
				Services: []protocol.ServiceInfo{{Name: "svc", Methods: []string{"M"}}},
			})
			if _, err := nc.Write(ack); err != nil {
				_ = nc.Close()
				continue
			}
			p.conns <- &peerConn{nc: nc, rd: rd}
		}
	})
	t.Cleanup(func() {
		_ = l.Close()
		wg.Wait()
		mu.Lock()
		for _, nc := range open {
			_ = nc.Close()
		}
		mu.Unlock()
	})
	return p
}

// next is the next connection the client opened.
func (p *streamPeer) next(t testing.TB) *peerConn {
	t.Helper()
	select {
	case pc := <-p.conns:
		return pc
	case <-time.After(10 * time.Second):
		t.Fatal("no connection from the client")
		return nil
	}
}

// read returns the next frame from the client (a copy of its payload).
func (pc *peerConn) read(t testing.TB) (protocol.Header, []byte) {
	t.Helper()
	h, payload, err := pc.readErr()
	require.NoError(t, err)
	return h, payload
}

func (pc *peerConn) readErr() (protocol.Header, []byte, error) {
	_ = pc.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	h, payload, err := pc.rd.ReadFrame()
	return h, append([]byte(nil), payload...), err
}

// expect reads the next frame and checks its type.
func (pc *peerConn) expect(t testing.TB, typ protocol.FrameType) (protocol.Header, []byte) {
	t.Helper()
	h, payload := pc.read(t)
	require.Equal(t, typ, h.Type, "frame from the client")
	return h, payload
}

// request reads the next frame as a Request.
func (pc *peerConn) request(t testing.TB) (protocol.Header, protocol.Request) {
	t.Helper()
	h, payload := pc.expect(t, protocol.FrameRequest)
	var r protocol.Request
	require.NoError(t, protocol.ParseRequest(h, payload, protocol.DefaultLimits(), &r))
	return h, r
}

// message reads the next frame as a Message.
func (pc *peerConn) message(t testing.TB) (protocol.Header, protocol.Message) {
	t.Helper()
	h, payload := pc.expect(t, protocol.FrameMessage)
	var m protocol.Message
	require.NoError(t, protocol.ParseMessage(h, payload, protocol.DefaultLimits(), &m))
	return h, m
}

// windowUpdate reads the next frame as a WindowUpdate.
func (pc *peerConn) windowUpdate(t testing.TB) (uint64, protocol.WindowUpdate) {
	t.Helper()
	h, payload := pc.expect(t, protocol.FrameWindowUpdate)
	var w protocol.WindowUpdate
	require.NoError(t, protocol.ParseWindowUpdate(h, payload, &w))
	return h.ID, w
}

// closed waits for the client to close the connection, reading (and
// discarding) what it sends before; no Message may come.
func (pc *peerConn) closed(t testing.TB) {
	t.Helper()
	for {
		h, _, err := pc.readErr()
		if err != nil {
			var ne net.Error
			require.False(t, errors.As(err, &ne) && ne.Timeout(), "the client did not close the connection")
			return
		}
		require.NotEqual(t, protocol.FrameMessage, h.Type, "a message after the violation")
	}
}

func (pc *peerConn) write(t testing.TB, f []byte) {
	t.Helper()
	_, err := pc.nc.Write(f)
	require.NoError(t, err)
}

func (pc *peerConn) writeMessage(t testing.TB, id uint64, body string, md ...string) {
	t.Helper()
	m := protocol.Message{Body: []byte(body)}
	for i := 0; i < len(md); i += 2 {
		require.NoError(t, m.Metadata.Add(md[i], []byte(md[i+1])))
	}
	f, err := protocol.AppendMessage(nil, id, &m)
	require.NoError(t, err)
	pc.write(t, f)
}

func (pc *peerConn) writeEnd(t testing.TB, id uint64, md ...string) {
	t.Helper()
	var e protocol.End
	for i := 0; i < len(md); i += 2 {
		require.NoError(t, e.Metadata.Add(md[i], []byte(md[i+1])))
	}
	f, err := protocol.AppendEnd(nil, id, &e)
	require.NoError(t, err)
	pc.write(t, f)
}

func (pc *peerConn) writeWindowUpdate(t testing.TB, id uint64, returned, growth uint32) {
	t.Helper()
	f, err := protocol.AppendWindowUpdate(nil, id, &protocol.WindowUpdate{Returned: returned, Growth: growth})
	require.NoError(t, err)
	pc.write(t, f)
}

// waitBlockedIn waits until some goroutine's stack shows fn (a goroutine
// parked in it), by polling the stacks: no guessed sleep.
func waitBlockedIn(t testing.TB, fn string) {
	t.Helper()
	buf := make([]byte, 1<<20)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		n := runtime.Stack(buf, true)
		for _, g := range strings.Split(string(buf[:n]), "\n\n") {
			if strings.Contains(g, fn) && (strings.Contains(g, "[select") || strings.Contains(g, "[chan receive")) {
				return
			}
		}
		runtime.Gosched()
	}
	t.Fatalf("no goroutine blocked in %s", fn)
}

// waitParkedIn waits until some goroutine with fn on its stack is parked
// on a sync.Cond (a protocol.Writer waiting for buffer space), by polling
// the stacks: no guessed sleep.
func waitParkedIn(t testing.TB, fn string) {
	t.Helper()
	buf := make([]byte, 1<<20)
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		n := runtime.Stack(buf, true)
		for _, g := range strings.Split(string(buf[:n]), "\n\n") {
			if strings.Contains(g, fn) && strings.Contains(g, "[sync.Cond.Wait") {
				return
			}
		}
		runtime.Gosched()
	}
	t.Fatalf("no goroutine with %s parked on a sync.Cond", fn)
}
