package server_test

import (
	"context"
	"errors"
	"io"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/server"
)

// streamHandlers are the stream methods of the test mux.
type streamHandlers struct {
	entered chan struct{} // Hold signals entry
	ctxErr  chan error    // Hold reports ctx.Err() when it returns
	take    chan struct{} // Slow receives one message per value
	got     chan []byte   // Slow delivers what it received
	recvErr chan error    // Slow reports the error that ended its receiving
}

func newStreamHandlers() *streamHandlers {
	return &streamHandlers{
		entered: make(chan struct{}, 1024),
		ctxErr:  make(chan error, 1024),
		take:    make(chan struct{}, 1024),
		got:     make(chan []byte, 1024),
		recvErr: make(chan error, 1024),
	}
}

// registerStreams adds the "stream" service: Echo (bidi: every message
// back, End at the client's half-close), Sum (client-streaming: the total
// length), Count (server-streaming: "0".."n-1"), Hold (bidi: waits for
// its context), Slow (bidi: one Receive per value on take), Leak (returns
// with a Send blocked on the window in a goroutine it leaves behind, whose
// error goes to recvErr), Panic, Meta (headers, one message, trailers).
func registerStreams(mux *server.Mux, h *streamHandlers) {
	mux.HandleBidiStream("stream", "Echo", func(_ context.Context, s *server.Stream) error {
		for {
			m, err := s.Receive()
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return err
			}
			if err := s.Send(m); err != nil {
				return err
			}
		}
	})
	mux.HandleClientStream("stream", "Sum", func(_ context.Context, s *server.Stream) ([]byte, error) {
		n := 0
		for {
			m, err := s.Receive()
			if errors.Is(err, io.EOF) {
				return []byte(strconv.Itoa(n)), nil
			}
			if err != nil {
				return nil, err
			}
			n += len(m)
		}
	})
	mux.HandleServerStream("stream", "Count", func(_ context.Context, req []byte, s *server.Stream) error {
		n, err := strconv.Atoi(string(req))
		if err != nil {
			return err
		}
		for i := range n {
			if err := s.Send([]byte(strconv.Itoa(i))); err != nil {
				return err
			}
		}
		return nil
	})
	mux.HandleBidiStream("stream", "Hold", func(ctx context.Context, _ *server.Stream) error {
		h.entered <- struct{}{}
		<-ctx.Done()
		h.ctxErr <- ctx.Err()
		return ctx.Err()
	})
	mux.HandleBidiStream("stream", "Slow", func(ctx context.Context, s *server.Stream) error {
		h.entered <- struct{}{}
		for {
			select {
			case <-h.take:
			case <-ctx.Done():
				h.recvErr <- ctx.Err()
				return ctx.Err()
			}
			m, err := s.Receive()
			if err != nil {
				h.recvErr <- err
				if errors.Is(err, io.EOF) {
					return nil
				}
				return err
			}
			h.got <- append([]byte(nil), m...)
		}
	})
	mux.HandleBidiStream("stream", "Leak", func(_ context.Context, s *server.Stream) error {
		// The whole stream window: the next Send waits for credit.
		if err := s.Send(make([]byte, protocol.InitialStreamWindow)); err != nil {
			return err
		}
		started := make(chan struct{})
		go func() {
			close(started)
			h.recvErr <- s.Send([]byte("x")) // left behind by its handler
		}()
		<-started
		return nil
	})
	mux.HandleBidiStream("stream", "Panic", func(context.Context, *server.Stream) error { panic("stream boom") })
	mux.HandleBidiStream("stream", "Meta", func(ctx context.Context, s *server.Stream) error {
		if err := server.AddResponseMetadata(ctx, "h", "1"); err != nil {
			return err
		}
		if err := s.Send([]byte("m")); err != nil {
			return err
		}
		return server.AddResponseMetadata(ctx, "t", "2")
	})
}

// dialStream connects and completes a handshake that announces
// CapStreaming.
func dialStream(t testing.TB, addr string) *rawClient {
	t.Helper()
	c := dialNoHandshake(t, addr)
	c.handshakeWith(protocol.Handshake{Capabilities: protocol.CapStreaming | protocol.CapCancel})
	require.True(t, c.ack.Capabilities.Has(protocol.CapStreaming))
	return c
}

// open sends a Request that opens a stream: with a first message when
// body is not nil, half-closed with end. It returns the stream's id.
func (c *rawClient) open(service, method string, body []byte, end bool) uint64 {
	c.t.Helper()
	return c.send(service, method, body, func(r *protocol.Request) {
		r.Stream, r.HasMessage, r.EndStream, r.Cancellable = true, body != nil, end, false
	})
}

// msg sends a Message on stream id.
func (c *rawClient) msg(id uint64, body []byte, end bool) {
	c.t.Helper()
	f, err := protocol.AppendMessage(nil, id, &protocol.Message{Body: body, EndStream: end})
	require.NoError(c.t, err)
	c.write(f)
}

// end half-closes stream id with an End frame.
func (c *rawClient) end(id uint64) {
	c.t.Helper()
	f, err := protocol.AppendEnd(nil, id, &protocol.End{})
	require.NoError(c.t, err)
	c.write(f)
}

// windowUpdate sends a WindowUpdate for id (0: the connection).
func (c *rawClient) windowUpdate(id uint64, returned, growth uint32) {
	c.t.Helper()
	f, err := protocol.AppendWindowUpdate(nil, id, &protocol.WindowUpdate{Returned: returned, Growth: growth})
	require.NoError(c.t, err)
	c.write(f)
}

// streamFrame is one stream frame the server sent.
type streamFrame struct {
	typ  protocol.FrameType
	id   uint64
	body []byte               // Message (the compressed form when compressed)
	md   map[string]string    // Message headers, End trailers, Error metadata
	err  *protocol.ErrorFrame // Error
	wu   protocol.WindowUpdate
	// A compressed Message's codec id and declared length.
	compressed bool
	codecID    uint8
	origLen    uint32
}

// nextStream reads the next Message, End, Error or WindowUpdate frame,
// skipping pings.
func (c *rawClient) nextStream() streamFrame {
	c.t.Helper()
	lim := protocol.DefaultLimits()
	for {
		h, payload := c.read()
		f := streamFrame{typ: h.Type, id: h.ID}
		mdOf := func(m *protocol.Metadata) {
			if m.Len() == 0 {
				return
			}
			f.md = map[string]string{}
			for i := range m.Len() {
				k, v := m.At(i)
				f.md[string(k)] = string(v)
			}
		}
		switch h.Type {
		case protocol.FrameMessage:
			var m protocol.Message
			require.NoError(c.t, protocol.ParseMessage(h, payload, lim, &m))
			f.body = append([]byte(nil), m.Body...)
			f.compressed, f.codecID, f.origLen = m.Compressed, m.CodecID, m.OriginalLength
			mdOf(&m.Metadata)
		case protocol.FrameEnd:
			var e protocol.End
			require.NoError(c.t, protocol.ParseEnd(h, payload, lim, &e))
			mdOf(&e.Metadata)
		case protocol.FrameError:
			var e protocol.ErrorFrame
			require.NoError(c.t, protocol.ParseError(h, payload, lim, &e))
			f.err = &e
			mdOf(&e.Metadata)
		case protocol.FrameWindowUpdate:
			require.NoError(c.t, protocol.ParseWindowUpdate(h, payload, &f.wu))
		case protocol.FramePing:
			continue
		default:
			c.t.Fatalf("unexpected %v frame", h.Type)
		}
		return f
	}
}

// nextOf reads stream frames until one that is not a WindowUpdate, and
// returns it with the bytes the WindowUpdates returned, per id.
func (c *rawClient) nextOf() (streamFrame, map[uint64]uint32) {
	c.t.Helper()
	ret := map[uint64]uint32{}
	for {
		f := c.nextStream()
		if f.typ != protocol.FrameWindowUpdate {
			return f, ret
		}
		ret[f.id] += f.wu.Returned
	}
}
