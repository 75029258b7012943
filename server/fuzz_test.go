package server_test

import (
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/codecs"
	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/server"
)

// pipeListener hands out in-memory connections (net.Pipe), so that a fuzz
// target can feed a server without sockets.
type pipeListener struct {
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), closed: make(chan struct{})}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

func (l *pipeListener) Addr() net.Addr { return pipeAddr{} }

// dial returns the client end of a new connection.
func (l *pipeListener) dial() net.Conn {
	client, srv := net.Pipe()
	l.conns <- srv
	return client
}

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe" }

// drainHandlers empties the test handlers' signal channels until the test
// ends, so that a fuzzed connection's Hold, Slow and OneWay calls never
// block on a full channel (Slow is fed takes, Hold is never released: its
// context ends with its connection).
func drainHandlers(tb testing.TB, h *testHandlers) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-h.entered:
			case <-h.ctxErr:
			case <-h.oneWay:
			case <-h.peers:
			case <-h.st.entered:
			case <-h.st.ctxErr:
			case <-h.st.got:
			case <-h.st.recvErr:
			case h.st.take <- struct{}{}:
			case <-done:
				return
			}
		}
	})
	tb.Cleanup(func() {
		close(done)
		wg.Wait()
	})
}

// fuzzHandshake is the handshake a fuzzed connection opens with: its
// capabilities chosen by the input's first byte (streaming, cancel,
// compression, and whether codecs are offered), so that every path of
// the read loop is reachable; the rest of the input follows it.
func fuzzHandshake(t *testing.T, choice byte) []byte {
	hs := protocol.Handshake{Version: protocol.Version, MaxFrameSize: 1 << 20}
	if choice&1 != 0 {
		hs.Capabilities |= protocol.CapStreaming
	}
	if choice&2 != 0 {
		hs.Capabilities |= protocol.CapCancel
	}
	if choice&4 == 0 {
		hs.Capabilities |= protocol.CapCompression
		hs.Codecs = []string{"zstd", "s2", "gzip", "br"}
	}
	b, err := protocol.AppendHandshake(nil, &hs)
	require.NoError(t, err)
	return b
}

// FuzzServerConnection sends a valid handshake (its capabilities chosen
// by the input's first byte), then the rest of the input: the server must
// never panic (a recovered panic on the read loop counts too:
// Stats.ReadLoopPanics), must answer or close, must keep serving other connections,
// and must give back every budget (decodes, decoded and retained bytes,
// frame memory). The seeds include compressed requests in each codec,
// whole and cut, so that the fuzzer reaches the decoders through the
// request path, and stream frames (a stream's opening and later
// messages, window updates, ends) with declared lengths at and beyond
// MaxWindow, which once ended the process (issue 25).
func FuzzServerConnection(f *testing.F) {
	const streams, plain = 0x03, 0x02 // handshake choices: streaming+cancel+codecs; cancel+codecs
	req, _ := protocol.AppendRequest(nil, 1, &protocol.Request{Service: 0, Method: 0, Body: []byte("x")})
	f.Add(append([]byte{plain}, req...))
	for i, name := range []string{"zstd", "s2", "gzip", "br"} {
		c, _ := codecs.ByName(name)
		body := compressible(3000)
		z, _, _ := c.Compress(make([]byte, 0, 4096), body)
		creq, _ := protocol.AppendRequest(nil, 1, &protocol.Request{Service: 0, Method: 0, Body: z,
			Compressed: true, CodecID: uint8(i + 1), OriginalLength: uint32(len(body)), Cancellable: true})
		f.Add(append([]byte{plain}, creq...))
		f.Add(append([]byte{plain}, creq[:len(creq)-3]...))
	}
	cancel, _ := protocol.AppendCancel(nil, 1, protocol.CancelCaller)
	f.Add(append(append([]byte{plain}, req...), cancel...))
	f.Add(append([]byte{plain}, protocol.AppendPing(nil, [8]byte{1})...))
	f.Add([]byte{plain, protocol.Magic, 3, 0, 0, 0xff, 0xff, 0xff, 0x7f})
	f.Add([]byte{})

	// Streams: the methods' ids follow registration order in newTestMux's
	// catalog; the fuzzer finds the others from these.
	declared := func(id uint64, n uint32) []byte {
		m, _ := protocol.AppendMessage(nil, id, &protocol.Message{Body: []byte{0}, Compressed: true, CodecID: 1, OriginalLength: n})
		return m
	}
	for svc := range uint16(3) {
		for meth := range uint16(8) {
			open, _ := protocol.AppendRequest(nil, 1, &protocol.Request{Service: svc, Method: meth, Stream: true, HasMessage: true, Body: []byte("first")})
			msg, _ := protocol.AppendMessage(nil, 1, &protocol.Message{Body: []byte("second")})
			end, _ := protocol.AppendEnd(nil, 1, &protocol.End{})
			wu, _ := protocol.AppendWindowUpdate(nil, 1, &protocol.WindowUpdate{Returned: 1, Growth: 1 << 16})
			seed := append([]byte{streams}, open...)
			seed = append(append(append(seed, msg...), wu...), end...)
			f.Add(seed)
			f.Add(append(append([]byte{streams}, open...), declared(1, protocol.MaxWindow)...))
		}
	}
	unary, _ := protocol.AppendRequest(nil, 1, &protocol.Request{Service: 0, Method: 0, Body: []byte("x")})
	f.Add(append(append([]byte{streams}, unary...), declared(1, 1<<32-1)...))
	f.Add(append(append([]byte{streams}, unary...), declared(1, protocol.MaxWindow+1)...))

	h := newHandlers()
	drainHandlers(f, h)
	srv, err := server.New(newTestMux(h), server.Options{HandshakeTimeout: time.Second, KeepaliveInterval: -1, IdleTimeout: -1})
	require.NoError(f, err)
	l := newPipeListener()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	f.Cleanup(func() {
		_ = srv.Close()
		<-served
	})
	hs, err := protocol.AppendHandshake(nil, &protocol.Handshake{Version: protocol.Version, MaxFrameSize: 1 << 20,
		Capabilities: protocol.CapCompression, Codecs: []string{"zstd", "s2", "gzip", "br"}})
	require.NoError(f, err)

	f.Fuzz(func(t *testing.T, input []byte) {
		var choice byte
		if len(input) > 0 {
			choice, input = input[0], input[1:]
		}
		c := l.dial()
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		done := make(chan struct{})
		go func() { // drain whatever the server sends
			defer close(done)
			_, _ = io.Copy(io.Discard, c)
		}()
		if _, err := c.Write(fuzzHandshake(t, choice)); err != nil {
			t.Fatalf("handshake: %v", err)
		}
		if _, err := c.Write(input); err != nil && !errors.Is(err, io.ErrClosedPipe) {
			t.Fatalf("write: %v", err)
		}
		_ = c.Close()
		<-done

		// The server still serves a well-behaved client.
		good := l.dial()
		defer good.Close()
		_ = good.SetDeadline(time.Now().Add(10 * time.Second))
		rd := protocol.NewReader(good, protocol.DefaultLimits())
		if _, err := good.Write(hs); err != nil {
			t.Fatal(err)
		}
		if h, _, err := rd.ReadFrame(); err != nil || h.Type != protocol.FrameHandshakeAck {
			t.Fatalf("handshake after junk: %v %v", h.Type, err)
		}
		if _, err := good.Write(req); err != nil {
			t.Fatal(err)
		}
		if h, _, err := rd.ReadFrame(); err != nil || h.Type != protocol.FrameResponse {
			t.Fatalf("call after junk: %v %v", h.Type, err)
		}
		if n := srv.Stats().ReadLoopPanics; n != 0 {
			t.Fatalf("%d connections ended by a panic on the read loop (the log has the stack)", n)
		}
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
			st := srv.Stats()
			g := st.Governor
			if g.Decodes.Used == 0 && g.Retained.Used == 0 && g.Decoded.Used == 0 && st.FrameMemory == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("budgets still held after the junk connection ended: %+v, frame memory %d", g, st.FrameMemory)
			}
		}
	})
}
