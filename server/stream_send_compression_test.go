package server_test

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/codecs"
	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/protocol/status"
	"github.com/sluicerpc/sluice/server"
	"github.com/sluicerpc/sluice/server/servertest"
	"github.com/sluicerpc/sluice/spi"
)

// zsHandlers are the methods of the "zs" service (zsMux): Feed
// (server-streaming) sends each of feed, counting the Sends that returned
// nil in sent and reporting the first error in sendErr; Sum
// (client-streaming) receives to the end and answers resp; Pump
// (server-streaming) sends pump once per value on tick, until tick closes.
type zsHandlers struct {
	feed    [][]byte
	sent    atomic.Int64
	sendErr chan error
	resp    []byte
	pump    []byte
	tick    chan struct{}
}

func zsMux(h *zsHandlers) *server.Mux {
	h.sendErr = make(chan error, 1)
	mux := server.NewMux()
	mux.HandleServerStream("zs", "Feed", func(_ context.Context, _ []byte, s *server.Stream) error {
		for _, m := range h.feed {
			if err := s.Send(m); err != nil {
				h.sendErr <- err
				return err
			}
			h.sent.Add(1)
		}
		return nil
	})
	mux.HandleClientStream("zs", "Sum", func(_ context.Context, s *server.Stream) ([]byte, error) {
		for {
			if _, err := s.Receive(); errors.Is(err, io.EOF) {
				return h.resp, nil
			} else if err != nil {
				return nil, err
			}
		}
	})
	mux.HandleServerStream("zs", "Pump", func(_ context.Context, _ []byte, s *server.Stream) error {
		for range h.tick {
			if err := s.Send(h.pump); err != nil {
				return err
			}
		}
		return nil
	})
	return mux
}

// serveZs serves zsMux(h) with o on l until the test ends.
func serveZs(t *testing.T, l net.Listener, h *zsHandlers, o server.Options) *testServer {
	t.Helper()
	srv, err := server.New(zsMux(h), o)
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(l) }()
	t.Cleanup(func() {
		_ = srv.Close()
		require.ErrorIs(t, <-done, server.ErrServerClosed)
	})
	return &testServer{Server: srv, addr: l.Addr().String()}
}

// startZs serves zsMux(h) on TCP loopback.
func startZs(t *testing.T, h *zsHandlers, o server.Options) *testServer {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	return serveZs(t, l, h, o)
}

// everyCodec is a compression config accepting every built-in codec and s2.
func everyCodec() codecs.Config {
	return codecs.Config{Codecs: []spi.Codec{codecs.Zstd(), codecs.Gzip(), codecs.Brotli(), codecs.S2()}}
}

// handshakeStreaming completes a handshake announcing streaming and
// compression with offer.
func (c *rawClient) handshakeStreaming(offer ...string) {
	c.t.Helper()
	c.handshakeWith(protocol.Handshake{Capabilities: protocol.CapStreaming | protocol.CapCompression | protocol.CapCancel, Codecs: offer})
	require.True(c.t, c.ack.Capabilities.Has(protocol.CapStreaming))
}

// decodeMessage returns f's body decoded by the codec its id names in the
// ack, or as it is when uncompressed.
func (c *rawClient) decodeMessage(f streamFrame) []byte {
	c.t.Helper()
	return c.decodeResponse(result{body: f.body, compressed: f.compressed, codecID: f.codecID, origLen: f.origLen})
}

// nextMessageFrame reads stream frames up to the next Message (WindowUpdates
// skipped) and fails on anything else.
func (c *rawClient) nextMessageFrame(id uint64) streamFrame {
	c.t.Helper()
	f, _ := c.nextOf()
	require.Equal(c.t, protocol.FrameMessage, f.typ, "%+v", f.err)
	require.Equal(c.t, id, f.id)
	return f
}

// expectEnd reads stream frames up to the next one, which must be End.
func (c *rawClient) expectEnd(id uint64) {
	c.t.Helper()
	f, _ := c.nextOf()
	require.Equal(c.t, protocol.FrameEnd, f.typ, "%+v", f.err)
	require.Equal(c.t, id, f.id)
}

// TestStreamMessagesAreCompressedWithTheResponseCodec: the server
// compresses the stream messages it sends as it compresses unary
// responses: with the first profile of the client's offer it accepts,
// when the method's policy finds it worth it (a compressible 4 KiB message
// is, a 100-byte one is not), the frame saying codec and original length;
// a client-streaming call's response is a stream message and goes the
// same way. Each is counted in Stats.CompressedStreamMessages, not in
// CompressedResponses.
func TestStreamMessagesAreCompressedWithTheResponseCodec(t *testing.T) {
	big, small := compressible(4096), compressible(100)
	for _, name := range []string{"zstd", "gzip", "br", "s2"} {
		t.Run(name, func(t *testing.T) {
			h := &zsHandlers{feed: [][]byte{big, small}, resp: big}
			s := startZs(t, h, server.Options{Compression: everyCodec()})
			c := dialNoHandshake(t, s.addr)
			c.handshakeStreaming("unknown", name, "zstd", "gzip")

			id := c.open("zs", "Feed", []byte("go"), true)
			f := c.nextMessageFrame(id)
			require.True(t, f.compressed, "a compressible 4 KiB message")
			assert.Equal(t, name, c.ack.Codecs[f.codecID-1], "the first accepted profile of the offer")
			assert.Equal(t, uint32(len(big)), f.origLen)
			assert.Less(t, len(f.body), len(big)/4)
			assert.Equal(t, big, c.decodeMessage(f))
			f = c.nextMessageFrame(id)
			assert.False(t, f.compressed, "100 bytes are below MinSize")
			assert.Equal(t, small, f.body)
			c.expectEnd(id)

			id = c.open("zs", "Sum", nil, true)
			f = c.nextMessageFrame(id)
			require.True(t, f.compressed, "the client-streaming response")
			assert.Equal(t, name, c.ack.Codecs[f.codecID-1])
			assert.Equal(t, big, c.decodeMessage(f))
			c.expectEnd(id)

			st := s.Stats()
			assert.Equal(t, uint64(2), st.CompressedStreamMessages)
			assert.Zero(t, st.CompressedResponses)
			assert.Zero(t, st.ProtocolViolations)
			requireLedgerZero(t, s)
		})
	}
}

// TestStreamMessagesFollowTheMethodsPolicy: a method whose policy is off
// (codecs.Config.Methods) sends its messages uncompressed while another
// method of the same connection compresses; with compression Off, or a
// client that offered nothing, nothing is compressed.
func TestStreamMessagesFollowTheMethodsPolicy(t *testing.T) {
	big := compressible(4096)
	check := func(t *testing.T, o server.Options, offer []string, feedCompressed, sumCompressed bool) {
		t.Helper()
		h := &zsHandlers{feed: [][]byte{big}, resp: big}
		s := startZs(t, h, o)
		c := dialNoHandshake(t, s.addr)
		c.handshakeStreaming(offer...)
		id := c.open("zs", "Feed", []byte("go"), true)
		f := c.nextMessageFrame(id)
		assert.Equal(t, feedCompressed, f.compressed, "zs/Feed")
		assert.Equal(t, big, c.decodeMessage(f))
		c.expectEnd(id)
		id = c.open("zs", "Sum", nil, true)
		f = c.nextMessageFrame(id)
		assert.Equal(t, sumCompressed, f.compressed, "zs/Sum")
		assert.Equal(t, big, c.decodeMessage(f))
		c.expectEnd(id)
		n := uint64(0)
		for _, b := range []bool{feedCompressed, sumCompressed} {
			if b {
				n++
			}
		}
		assert.Equal(t, n, s.Stats().CompressedStreamMessages)
		requireLedgerZero(t, s)
	}
	t.Run("a method's policy off", func(t *testing.T) {
		cfg := everyCodec()
		cfg.Methods = map[string]codecs.Policy{"zs/Feed": {MinSize: -1}}
		check(t, server.Options{Compression: cfg}, []string{"zstd"}, false, true)
	})
	t.Run("a method's MinSize above the message", func(t *testing.T) {
		cfg := everyCodec()
		cfg.Methods = map[string]codecs.Policy{"zs/Sum": {MinSize: len(big) + 1}}
		check(t, server.Options{Compression: cfg}, []string{"zstd"}, true, false)
	})
	t.Run("compression off", func(t *testing.T) {
		check(t, server.Options{Compression: codecs.Config{Off: true}}, []string{"zstd"}, false, false)
	})
	t.Run("nothing offered", func(t *testing.T) {
		check(t, server.Options{Compression: everyCodec()}, nil, false, false)
	})
}

// TestACompressedStreamMessageIsChargedItsCostOnTheSendWindow: the server
// charges each message it sends protocol.MessageCost(its wire length, its
// uncompressed length) on the stream's send window (docs/streaming.md,
// Flow control), the receiver's figure: compressible messages of 5000
// bytes, a few dozen on the wire, cost 5000 each, so the server sends 14
// (70,000 > 64 KiB: the 14th borrows) and waits; returning 4,464 bytes
// (credit exactly 0) does not release it, one byte more does. Charged the
// wire length, it would not have waited; charged more than the cost, the
// last byte would not release it.
func TestACompressedStreamMessageIsChargedItsCostOnTheSendWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		msg := compressible(5000)
		h := &zsHandlers{}
		for range 15 {
			h.feed = append(h.feed, msg)
		}
		n := servertest.NewNetwork()
		l, err := n.Listen("")
		require.NoError(t, err)
		s := serveZs(t, l, h, server.Options{Compression: everyCodec()})
		nc, err := n.Dial(context.Background(), s.addr)
		require.NoError(t, err)
		c := newRawClient(t, nc)
		c.handshakeStreaming("zstd")

		id := c.open("zs", "Feed", []byte("go"), true)
		var charged uint64
		var got int
		for charged < protocol.InitialStreamWindow {
			f := c.nextMessageFrame(id)
			require.True(t, f.compressed)
			require.Less(t, len(f.body), len(msg)/10)
			assert.Equal(t, msg, c.decodeMessage(f))
			charged += protocol.MessageCost(len(f.body), uint64(f.origLen))
			got++
		}
		require.Equal(t, uint64(14*5000), charged)
		synctest.Wait()
		assert.Equal(t, int64(14), h.sent.Load(), "the 15th Send waits for credit")

		c.windowUpdate(id, uint32(charged-protocol.InitialStreamWindow), 0)
		synctest.Wait()
		assert.Equal(t, int64(14), h.sent.Load(), "credit 0 is no credit: the 15th Send still waits")

		c.windowUpdate(id, 1, 0)
		f := c.nextMessageFrame(id)
		require.True(t, f.compressed)
		assert.Equal(t, msg, c.decodeMessage(f))
		c.expectEnd(id)
		assert.Equal(t, int64(15), h.sent.Load())
		assert.Zero(t, s.Stats().ProtocolViolations)
		requireLedgerZero(t, s)
	})
}

// TestAStreamMessageIsCheckedAgainstTheFrameSizeCompressed: the client's
// maximum frame size is checked against the encoded frame: a compressible
// message larger than it goes, compressed; an incompressible one fails
// its Send with ResourceExhausted, and nothing of it is sent.
func TestAStreamMessageIsCheckedAgainstTheFrameSizeCompressed(t *testing.T) {
	big := compressible(2 * protocol.MinFrameSize)
	noise := make([]byte, 2*protocol.MinFrameSize)
	r := rand.New(rand.NewPCG(1, 2)) // random bytes, a fixed seed: incompressible
	for i := range noise {
		noise[i] = byte(r.Uint32())
	}
	h := &zsHandlers{feed: [][]byte{big, noise}}
	s := startZs(t, h, server.Options{Compression: everyCodec()})
	c := dialNoHandshake(t, s.addr)
	c.handshakeWith(protocol.Handshake{Capabilities: protocol.CapStreaming | protocol.CapCompression, Codecs: []string{"zstd"}, MaxFrameSize: protocol.MinFrameSize})
	id := c.open("zs", "Feed", []byte("go"), true)
	f := c.nextMessageFrame(id)
	require.True(t, f.compressed)
	assert.Equal(t, big, c.decodeMessage(f))
	f, _ = c.nextOf()
	require.Equal(t, protocol.FrameError, f.typ, "the handler's error ends the stream; nothing of the message went")
	assert.Equal(t, protocol.CodeResourceExhausted, f.err.Code)
	err := <-h.sendErr // sent before the handler returned
	assert.Equal(t, protocol.CodeResourceExhausted, status.Code(err), "%v", err)
	assert.Equal(t, int64(1), h.sent.Load())
	requireLedgerZero(t, s)
}

// TestSteadyCompressedStreamSendsDoNotAllocate: once warm, sending a
// compressed stream message allocates nothing, on the server's side or
// the raw client's (the compressed body goes into a buffer the stream
// reuses, the frame into another).
func TestSteadyCompressedStreamSendsDoNotAllocate(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("allocation count (the race detector allocates)")
	}
	h := &zsHandlers{pump: compressible(4096), tick: make(chan struct{})}
	s := startZs(t, h, server.Options{Compression: everyCodec()})
	c := dialNoHandshake(t, s.addr)
	c.handshakeStreaming("zstd")
	id := c.open("zs", "Pump", []byte("go"), true)
	lim := protocol.DefaultLimits()
	var m protocol.Message
	wu := make([]byte, 0, 64)
	compressed := 0
	round := func() {
		h.tick <- struct{}{}
		var hd protocol.Header
		var payload []byte
		for hd.Type != protocol.FrameMessage {
			hd, payload = c.read()
		}
		if err := protocol.ParseMessage(hd, payload, lim, &m); err != nil {
			t.Fatal(err)
		}
		if m.Compressed {
			compressed++
		}
		// The message's cost back to the stream's window and the connection's.
		back := protocol.WindowUpdate{Returned: uint32(protocol.MessageCost(len(m.Body), uint64(m.OriginalLength)))}
		wu, _ = protocol.AppendWindowUpdate(wu[:0], id, &back)
		wu, _ = protocol.AppendWindowUpdate(wu, 0, &back)
		c.write(wu)
	}
	for range 100 {
		round()
	}
	allocs := testing.AllocsPerRun(1000, round)
	assert.Equal(t, 100+1+1000, compressed, "every message went compressed (AllocsPerRun runs once more to warm up)")
	assert.Zero(t, allocs, "allocations per compressed message")
	close(h.tick)
	c.expectEnd(id)
	requireLedgerZero(t, s)
}
