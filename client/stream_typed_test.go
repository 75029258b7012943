package client_test

import (
	"context"
	"errors"
	"io"
	"math"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/client"
	"github.com/sluicerpc/sluice/message"
	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/protocol/status"
	"github.com/sluicerpc/sluice/server"
	"github.com/sluicerpc/sluice/spi"
)

type cpoint struct {
	X int `json:"x"`
}

type ccount struct {
	N int `json:"n"`
}

// cnum does not encode when V is NaN (encoding/json refuses it).
type cnum struct {
	V float64 `json:"v"`
}

var (
	pointC = message.JSON[cpoint]()
	countC = message.JSON[ccount]()
	numC   = message.JSON[cnum]()
)

// typedServer is a real server with typed and raw stream methods of
// service "ts"; errs gets the errors its waiting handlers end with.
type typedServer struct {
	*testServer
	errs chan error
}

// startTypedServer serves, on TCP loopback:
//
//	Count (typed server-streaming ccount -> cpoint): header h=1, X = 0..N-1, trailer t=2
//	Sum (typed client-streaming cpoint -> ccount): the sum of the X
//	Fail (typed client-streaming): trailer t=4 and Aborted, after the client's half-close
//	Echo (typed bidi cpoint -> cpoint): X+1 for every message
//	Wait (typed bidi): echoes until an error, which goes to errs
//	Garbage (raw bidi): after one message, sends "not json", then waits for its context (errs)
//	GarbageFill (raw server-streaming): {"x":1}, "not json", {"x":2}
//	GarbageSum (raw client-streaming): answers "not json"
//	None (raw bidi): ends with no message at the client's half-close
//	Two (raw bidi): sends two messages at the client's half-close
func startTypedServer(t *testing.T) *typedServer {
	t.Helper()
	errs := make(chan error, 64)
	mux := server.NewMux()
	server.HandleServerStream(mux, "ts", "Count", countC, pointC, func(ctx context.Context, req *ccount, s *server.ServerStream[cpoint]) error {
		if err := server.AddResponseMetadata(ctx, "h", "1"); err != nil {
			return err
		}
		for i := range req.N {
			if err := s.Send(&cpoint{X: i}); err != nil {
				return err
			}
		}
		return server.AddResponseMetadata(ctx, "t", "2")
	})
	server.HandleClientStream(mux, "ts", "Sum", pointC, countC, func(ctx context.Context, s *server.ClientStream[cpoint]) (*ccount, error) {
		n := 0
		for {
			m, err := s.Receive()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, err
			}
			n += m.X
		}
		return &ccount{N: n}, nil
	})
	server.HandleClientStream(mux, "ts", "Fail", pointC, countC, func(ctx context.Context, s *server.ClientStream[cpoint]) (*ccount, error) {
		for {
			if _, err := s.Receive(); err != nil {
				if !errors.Is(err, io.EOF) {
					return nil, err
				}
				break
			}
		}
		if err := server.AddResponseMetadata(ctx, "t", "4"); err != nil {
			return nil, err
		}
		return nil, status.New(protocol.CodeAborted, "no")
	})
	echo := func(tail chan<- error) func(context.Context, *server.BidiStream[cpoint, cpoint]) error {
		return func(_ context.Context, s *server.BidiStream[cpoint, cpoint]) error {
			for {
				m, err := s.Receive()
				if errors.Is(err, io.EOF) && tail == nil {
					return nil
				}
				if err == nil {
					err = s.Send(&cpoint{X: m.X + 1})
				}
				if err != nil {
					if tail != nil {
						tail <- err
					}
					return err
				}
			}
		}
	}
	server.HandleBidiStream(mux, "ts", "Echo", pointC, pointC, echo(nil))
	server.HandleBidiStream(mux, "ts", "Wait", pointC, pointC, echo(errs))
	mux.HandleBidiStream("ts", "Garbage", func(ctx context.Context, s *server.Stream) error {
		if _, err := s.Receive(); err != nil {
			return err
		}
		if err := s.Send([]byte("not json")); err != nil {
			return err
		}
		<-ctx.Done()
		errs <- ctx.Err()
		return ctx.Err()
	})
	mux.HandleServerStream("ts", "GarbageFill", func(_ context.Context, _ []byte, s *server.Stream) error {
		for _, m := range []string{`{"x":1}`, "not json", `{"x":2}`} {
			if err := s.Send([]byte(m)); err != nil {
				return err
			}
		}
		return nil
	})
	mux.HandleClientStream("ts", "GarbageSum", func(_ context.Context, s *server.Stream) ([]byte, error) {
		for {
			if _, err := s.Receive(); err != nil {
				return []byte("not json"), nil
			}
		}
	})
	drain := func(s *server.Stream) error {
		for {
			if _, err := s.Receive(); err != nil {
				if errors.Is(err, io.EOF) {
					return nil
				}
				return err
			}
		}
	}
	mux.HandleBidiStream("ts", "None", func(_ context.Context, s *server.Stream) error { return drain(s) })
	mux.HandleBidiStream("ts", "Two", func(_ context.Context, s *server.Stream) error {
		if err := drain(s); err != nil {
			return err
		}
		for range 2 {
			if err := s.Send([]byte(`{"n":1}`)); err != nil {
				return err
			}
		}
		return nil
	})
	return &typedServer{testServer: startServer(t, mux, server.Options{}), errs: errs}
}

// requireIdle waits until the server holds nothing for any call.
func (ts *typedServer) requireIdle(t *testing.T) {
	t.Helper()
	require.Eventually(t, func() bool {
		st := ts.srv.Stats()
		g := st.Governor
		return st.ServerCalls.Active == 0 && st.ServerCalls.Reserved == 0 &&
			g.Decodes.Used == 0 && g.Retained.Used == 0 && g.Decoded.Used == 0 && g.Stream.Used == 0
	}, 10*time.Second, time.Millisecond, "%+v", ts.srv.Stats())
}

// TestTypedStreamsEndToEnd: the typed client and server over TCP, each
// shape with message.JSON (protomsg is covered by the server's tests):
// messages are encoded and decoded with the codecs, headers and trailers
// arrive, the half-close ends the server's receiving, the server's End is io.EOF, and
// afterwards the server holds nothing.
func TestTypedStreamsEndToEnd(t *testing.T) {
	ts := startTypedServer(t)
	c := dial(t, client.Options{}, ts.addr)
	ctx := ctxTimeout(t, 30*time.Second)

	t.Run("server-streaming", func(t *testing.T) {
		s, err := client.NewServerStream(ctx, c, "ts/Count", &ccount{N: 300}, countC, pointC)
		require.NoError(t, err)
		defer s.Close()
		hd, err := s.Header()
		require.NoError(t, err)
		assert.Equal(t, "1", metaValue(t, hd, "h"))
		for i := range 300 {
			m, err := s.Receive()
			require.NoError(t, err)
			require.Equal(t, i, m.X)
		}
		_, err = s.Receive()
		require.ErrorIs(t, err, io.EOF)
		assert.Equal(t, "2", metaValue(t, s.Trailer(), "t"))
	})
	t.Run("client-streaming", func(t *testing.T) {
		s, err := client.NewClientStream(ctx, c, "ts/Sum", pointC, countC)
		require.NoError(t, err)
		want := 0
		for i := range 3000 { // far more than a 64 KiB window
			require.NoError(t, s.Send(&cpoint{X: i}))
			want += i
		}
		resp, err := s.CloseAndReceive()
		require.NoError(t, err)
		assert.Equal(t, want, resp.N)
		_, err = s.Header()
		require.NoError(t, err)
		_, err = s.CloseAndReceive()
		requireCode(t, err, protocol.CodeFailedPrecondition)
		require.NoError(t, s.Close(), "Close after the end is harmless")
	})
	t.Run("bidi", func(t *testing.T) {
		s, err := client.NewBidiStream(ctx, c, "ts/Echo", pointC, pointC)
		require.NoError(t, err)
		defer s.Close()
		const n = 2000
		sent := make(chan error, 1)
		go func() {
			for i := range n {
				if err := s.Send(&cpoint{X: i}); err != nil {
					sent <- err
					return
				}
			}
			sent <- s.CloseSend() // the half-close ends the server's loop
		}()
		for i := range n {
			m, err := s.Receive()
			require.NoError(t, err)
			require.Equal(t, i+1, m.X)
		}
		_, err = s.Receive()
		require.ErrorIs(t, err, io.EOF)
		require.NoError(t, <-sent)
	})
	ts.requireIdle(t)
}

// TestTypedStreamErrorCarriesTrailers: a typed client-streaming handler's
// error is CloseAndReceive's, with the trailers it set.
func TestTypedStreamErrorCarriesTrailers(t *testing.T) {
	ts := startTypedServer(t)
	c := dial(t, client.Options{}, ts.addr)
	s, err := client.NewClientStream(ctxTimeout(t, 10*time.Second), c, "ts/Fail", pointC, countC)
	require.NoError(t, err)
	require.NoError(t, s.Send(&cpoint{X: 1}))
	_, err = s.CloseAndReceive()
	st := requireCode(t, err, protocol.CodeAborted)
	assert.Equal(t, "no", st.Message)
	assert.Equal(t, "4", metaValue(t, s.Trailer(), "t"))
	ts.requireIdle(t)
}

// TestTypedStreamResponseThatDoesNotDecode: a server message the response
// codec rejects is Internal, as for Call; it ends the stream from the
// client's side: the server's handler sees the Cancel, every later Receive
// returns the same error and nothing after it (neither the messages that
// followed nor the End), Send fails with it too, and the client is still
// usable.
func TestTypedStreamResponseThatDoesNotDecode(t *testing.T) {
	ts := startTypedServer(t)
	c := dial(t, client.Options{}, ts.addr)
	ctx := ctxTimeout(t, 10*time.Second)

	t.Run("bidi", func(t *testing.T) {
		s, err := client.NewBidiStream(ctx, c, "ts/Garbage", pointC, pointC)
		require.NoError(t, err)
		defer s.Close()
		require.NoError(t, s.Send(&cpoint{X: 1}))
		_, err = s.Receive()
		st := requireCode(t, err, protocol.CodeInternal)
		assert.Contains(t, st.Message, "decoding a response message with json")
		_, again := s.Receive()
		assert.Equal(t, err, again)
		assert.Equal(t, err, s.Send(&cpoint{X: 2}), "Send after the local end")
		require.ErrorIs(t, recv(t, ts.errs), context.Canceled, "the server was sent a Cancel")
	})
	t.Run("server-streaming", func(t *testing.T) {
		s, err := client.NewServerStream(ctx, c, "ts/GarbageFill", &ccount{}, countC, pointC)
		require.NoError(t, err)
		defer s.Close()
		m, err := s.Receive()
		require.NoError(t, err)
		assert.Equal(t, 1, m.X)
		_, err = s.Receive()
		requireCode(t, err, protocol.CodeInternal)
		_, again := s.Receive()
		assert.Equal(t, err, again, `not {"x":2}, not io.EOF`)
	})
	t.Run("client-streaming", func(t *testing.T) {
		s, err := client.NewClientStream(ctx, c, "ts/GarbageSum", pointC, countC)
		require.NoError(t, err)
		require.NoError(t, s.Send(&cpoint{X: 1}))
		_, err = s.CloseAndReceive()
		requireCode(t, err, protocol.CodeInternal)
	})
	s, err := client.NewServerStream(ctx, c, "ts/Count", &ccount{N: 1}, countC, pointC)
	require.NoError(t, err)
	m, err := s.Receive()
	require.NoError(t, err)
	assert.Equal(t, 0, m.X)
	require.NoError(t, s.Close())
	ts.requireIdle(t)
}

// TestTypedStreamBadResponseCancelsAndReturnsCredit, at the frame level:
// after a message that does not decode the client sends Cancel and
// returns to the connection window the bytes of the message it took and
// of the one it dropped unread; the server's late End is ignored. The
// endpoint policy is told, once, that the client abandoned the attempt
// (cancelled: a codec mismatch says nothing about the endpoint's health).
func TestTypedStreamBadResponseCancelsAndReturnsCredit(t *testing.T) {
	p := startStreamPeer(t, streamCaps)
	c := dial(t, client.Options{}, p.addr)
	rec := newRecording("r")
	_, err := c.SetEndpointPolicy(rec)
	require.NoError(t, err)
	s, err := client.NewBidiStream(ctxTimeout(t, 10*time.Second), c, "svc/M", pointC, pointC)
	require.NoError(t, err)
	defer s.Close()
	pc := p.next(t)
	h, _ := pc.request(t)
	bad, good := "not json", `{"x":1}`
	pc.writeMessage(t, h.ID, bad)
	pc.writeMessage(t, h.ID, good)
	_, err = s.Receive()
	requireCode(t, err, protocol.CodeInternal)
	_, r := rec.snapshot()
	require.Len(t, r, 1)
	assert.Equal(t, spi.OutcomeCancelled, r[0].outcome.Kind)
	assert.Equal(t, uint8(protocol.CodeInternal), r[0].outcome.Code)
	// The dropped message is dropped at the end if it has arrived, else
	// by the reader when it arrives: the WindowUpdate comes before or
	// after the Cancel, and returns both messages (the connection's
	// window had not reached its batch): their charges.
	var sawCancel, sawUpdate bool
	for !sawCancel || !sawUpdate {
		fh, payload := pc.read(t)
		switch fh.Type {
		case protocol.FrameCancel:
			require.False(t, sawCancel)
			sawCancel = true
			assert.Equal(t, h.ID, fh.ID)
		case protocol.FrameWindowUpdate:
			require.False(t, sawUpdate)
			sawUpdate = true
			var w protocol.WindowUpdate
			require.NoError(t, protocol.ParseWindowUpdate(fh, payload, &w))
			assert.Zero(t, fh.ID)
			assert.Equal(t, protocol.WindowUpdate{Returned: uint32(protocol.MessageCost(len(bad), uint64(len(bad))) + protocol.MessageCost(len(good), uint64(len(good))))}, w)
		default:
			t.Fatalf("unexpected %v frame", fh.Type)
		}
	}
	pc.writeEnd(t, h.ID) // crossed the Cancel: ignored
	_, again := s.Receive()
	assert.Equal(t, err, again)
	require.NoError(t, s.Close())
	_, r = rec.snapshot()
	assert.Len(t, r, 1)
	rec.requireExactlyOnce(t)
}

// TestTypedStreamBadResponseAfterTheServersEnd: when the server had
// already ended the stream, a message that does not decode still ends it
// for the caller: the messages behind it are dropped (their bytes go back
// to the connection), and Receive keeps returning the failure rather than
// them or the server's io.EOF.
func TestTypedStreamBadResponseAfterTheServersEnd(t *testing.T) {
	p := startStreamPeer(t, streamCaps)
	c := dial(t, client.Options{}, p.addr)
	s, err := client.NewBidiStream(ctxTimeout(t, 10*time.Second), c, "svc/M", pointC, pointC)
	require.NoError(t, err)
	defer s.Close()
	pc := p.next(t)
	h, _ := pc.request(t)
	bad, good := "not json", `{"x":1}`
	pc.writeMessage(t, h.ID, bad)
	pc.writeMessage(t, h.ID, good)
	pc.writeEnd(t, h.ID, "t", "1")
	// The trailers are visible once the End arrived (what came before it
	// arrived first).
	require.Eventually(t, func() bool { _, ok := s.Trailer().Get("t"); return ok }, 10*time.Second, time.Millisecond)
	_, err = s.Receive()
	requireCode(t, err, protocol.CodeInternal)
	_, again := s.Receive()
	assert.Equal(t, err, again, `not {"x":1}, not io.EOF`)
	id, w := pc.windowUpdate(t) // no Cancel: the stream had ended
	assert.Zero(t, id)
	assert.Equal(t, protocol.WindowUpdate{Returned: uint32(protocol.MessageCost(len(bad), uint64(len(bad))) + protocol.MessageCost(len(good), uint64(len(good))))}, w)
}

// TestTypedClientStreamNeedsExactlyOneResponse: a server that ends a
// client-streaming call with no message, or sends two, breaks the shape:
// CloseAndReceive returns Internal (the methods are bidi ones called as
// client streams, the server's shape check being the Stream flag).
func TestTypedClientStreamNeedsExactlyOneResponse(t *testing.T) {
	ts := startTypedServer(t)
	c := dial(t, client.Options{}, ts.addr)
	ctx := ctxTimeout(t, 10*time.Second)
	for method, want := range map[string]string{"ts/None": "without a response", "ts/Two": "more than one response"} {
		s, err := client.NewClientStream(ctx, c, method, pointC, countC)
		require.NoError(t, err)
		require.NoError(t, s.Send(&cpoint{X: 1}))
		_, err = s.CloseAndReceive()
		st := requireCode(t, err, protocol.CodeInternal)
		assert.Contains(t, st.Message, want)
	}
	ts.requireIdle(t)
}

// TestTypedStreamRequestThatDoesNotEncode: a request message that does
// not encode is InvalidArgument, as for Call, and nothing is sent: a
// server stream is not opened at all, and a bidi stream stays usable (the
// next frame the server gets is the next good message).
func TestTypedStreamRequestThatDoesNotEncode(t *testing.T) {
	p := startStreamPeer(t, streamCaps)
	c := dial(t, client.Options{}, p.addr)
	ctx := ctxTimeout(t, 10*time.Second)
	_, err := client.NewServerStream(ctx, c, "svc/M", &cnum{V: math.NaN()}, numC, pointC)
	st := requireCode(t, err, protocol.CodeInvalidArgument)
	assert.Contains(t, st.Message, "encoding a request message with json")

	s, err := client.NewBidiStream(ctx, c, "svc/M", numC, pointC)
	require.NoError(t, err)
	defer s.Close()
	pc := p.next(t)
	h, req := pc.request(t) // the bidi stream's: nothing came before it
	assert.False(t, req.HasMessage)
	requireCode(t, s.Send(&cnum{V: math.Inf(1)}), protocol.CodeInvalidArgument)
	require.NoError(t, s.Send(&cnum{V: 2}))
	mh, m := pc.message(t)
	assert.Equal(t, h.ID, mh.ID)
	assert.JSONEq(t, `{"v":2}`, string(m.Body))
}

// TestTypedStreamCancelledMidStream: cancelling a typed bidi stream's
// context in the middle ends its Receive and Send with the context's
// error and the server's handler with Canceled; the server holds nothing
// afterwards.
func TestTypedStreamCancelledMidStream(t *testing.T) {
	ts := startTypedServer(t)
	c := dial(t, client.Options{}, ts.addr)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := client.NewBidiStream(ctx, c, "ts/Wait", pointC, pointC)
	require.NoError(t, err)
	defer s.Close()
	require.NoError(t, s.Send(&cpoint{X: 1}))
	m, err := s.Receive()
	require.NoError(t, err)
	assert.Equal(t, 2, m.X)
	cancel()
	_, err = s.Receive()
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorIs(t, s.Send(&cpoint{X: 3}), context.Canceled)
	require.ErrorIs(t, recv(t, ts.errs), context.Canceled)
	ts.requireIdle(t)
}

// TestTypedStreamSendReusesItsBuffer: Send encodes into the stream's
// buffer, reused from message to message, and every message arrives
// intact.
func TestTypedStreamSendReusesItsBuffer(t *testing.T) {
	ts := startTypedServer(t)
	c := dial(t, client.Options{}, ts.addr)
	s, err := client.NewBidiStream(ctxTimeout(t, 10*time.Second), c, "ts/Echo", pointC, pointC)
	require.NoError(t, err)
	defer s.Close()
	var first *byte
	for i := range 10 {
		require.NoError(t, s.Send(&cpoint{X: i}))
		b := client.TypedSendBuffer(s)
		require.NotZero(t, cap(b))
		if i == 0 {
			first = unsafe.SliceData(b)
		} else {
			assert.Same(t, first, unsafe.SliceData(b), "Send %d encoded into a new buffer", i)
		}
		m, err := s.Receive()
		require.NoError(t, err)
		require.Equal(t, i+1, m.X)
	}
	require.NoError(t, s.CloseSend())
	_, err = s.Receive()
	require.ErrorIs(t, err, io.EOF)
	ts.requireIdle(t)
}
