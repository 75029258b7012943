package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/sluicerpc/sluice/message"
	"github.com/sluicerpc/sluice/message/protomsg"
	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/protocol/status"
	"github.com/sluicerpc/sluice/server"
)

type tpoint struct {
	X int `json:"x"`
}

type tcount struct {
	N int `json:"n"`
}

// tnum does not encode when V is NaN (encoding/json refuses it).
type tnum struct {
	V float64 `json:"v"`
}

// typedProbe is what the typed test handlers report.
type typedProbe struct {
	entered chan string // a handler's name, when it runs
	errs    chan error  // the errors the handlers saw, in order
	bufs    chan []byte // Count's send buffer after each Send
}

// typedMux registers the typed stream methods of service "ts":
//
//	Count (server-streaming tcount -> tpoint): header h=1, X = 0..N-1, trailer t=2
//	Sum (client-streaming tpoint -> tcount): the sum of the X received, added up after io.EOF
//	Echo (bidi tpoint -> tpoint): X+1 for every message
//	Swallow (client-streaming): reports its Receive errors, then answers {n: 7}
//	SwallowBidi (bidi): echoes; on an error reports it and the error of a Send, then returns nil
//	BadSend (bidi tpoint -> tnum): per message, a Send of NaN (its error reported) and of X
//	BadResp (client-streaming tpoint -> tnum): answers NaN
//	Wait (bidi): echoes until an error, which it reports and returns
//	Proto (bidi StringValue -> StringValue, protomsg): "re: " + the value
func typedMux(p *typedProbe) *server.Mux {
	mux := server.NewMux()
	pt, cnt, num := message.JSON[tpoint](), message.JSON[tcount](), message.JSON[tnum]()
	server.HandleServerStream(mux, "ts", "Count", cnt, pt, func(ctx context.Context, req *tcount, s *server.ServerStream[tpoint]) error {
		p.entered <- "Count"
		if err := server.AddResponseMetadata(ctx, "h", "1"); err != nil {
			return err
		}
		for i := range req.N {
			if err := s.Send(&tpoint{X: i}); err != nil {
				return err
			}
			p.bufs <- server.SendBuffer(s)
		}
		return server.AddResponseMetadata(ctx, "t", "2")
	})
	server.HandleClientStream(mux, "ts", "Sum", pt, cnt, func(_ context.Context, s *server.ClientStream[tpoint]) (*tcount, error) {
		var got []*tpoint // kept across Receives: each is the handler's own
		for {
			m, err := s.Receive()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, err
			}
			got = append(got, m)
		}
		n := 0
		for _, m := range got {
			n += m.X
		}
		return &tcount{N: n}, nil
	})
	server.HandleBidiStream(mux, "ts", "Echo", pt, pt, func(_ context.Context, s *server.BidiStream[tpoint, tpoint]) error {
		for {
			m, err := s.Receive()
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return err
			}
			if err := s.Send(&tpoint{X: m.X + 1}); err != nil {
				return err
			}
		}
	})
	server.HandleClientStream(mux, "ts", "Swallow", pt, cnt, func(_ context.Context, s *server.ClientStream[tpoint]) (*tcount, error) {
		for {
			_, err := s.Receive()
			if errors.Is(err, io.EOF) {
				return &tcount{N: 7}, nil
			}
			if err != nil {
				p.errs <- err
				_, again := s.Receive()
				p.errs <- again
				return &tcount{N: 7}, nil
			}
		}
	})
	server.HandleBidiStream(mux, "ts", "SwallowBidi", pt, pt, func(_ context.Context, s *server.BidiStream[tpoint, tpoint]) error {
		for {
			m, err := s.Receive()
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				p.errs <- err
				p.errs <- s.Send(&tpoint{X: 99})
				return nil
			}
			if err := s.Send(m); err != nil {
				return err
			}
		}
	})
	server.HandleBidiStream(mux, "ts", "BadSend", pt, num, func(_ context.Context, s *server.BidiStream[tpoint, tnum]) error {
		for {
			m, err := s.Receive()
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return err
			}
			p.errs <- s.Send(&tnum{V: math.NaN()})
			if err := s.Send(&tnum{V: float64(m.X)}); err != nil {
				return err
			}
		}
	})
	server.HandleClientStream(mux, "ts", "BadResp", pt, num, func(_ context.Context, s *server.ClientStream[tpoint]) (*tnum, error) {
		for {
			if _, err := s.Receive(); err != nil {
				if errors.Is(err, io.EOF) {
					return &tnum{V: math.NaN()}, nil
				}
				return nil, err
			}
		}
	})
	server.HandleBidiStream(mux, "ts", "Wait", pt, pt, func(_ context.Context, s *server.BidiStream[tpoint, tpoint]) error {
		for {
			m, err := s.Receive()
			if err != nil {
				p.errs <- err
				return err
			}
			if err := s.Send(m); err != nil {
				p.errs <- err
				return err
			}
		}
	})
	sv := protomsg.Codec[wrapperspb.StringValue]()
	server.HandleBidiStream(mux, "ts", "Proto", sv, sv, func(_ context.Context, s *server.BidiStream[wrapperspb.StringValue, wrapperspb.StringValue]) error {
		for {
			m, err := s.Receive()
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return err
			}
			if err := s.Send(wrapperspb.String("re: " + m.GetValue())); err != nil {
				return err
			}
		}
	})
	return mux
}

func newTypedProbe() *typedProbe {
	return &typedProbe{entered: make(chan string, 64), errs: make(chan error, 64), bufs: make(chan []byte, 64)}
}

// startTyped serves typedMux on TCP loopback and connects the raw client.
func startTyped(t *testing.T) (*testServer, *rawClient, *typedProbe) {
	t.Helper()
	p := newTypedProbe()
	srv, addr := serveMux(t, typedMux(p))
	ts := &testServer{Server: srv, addr: addr}
	return ts, dialStream(t, addr), p
}

func js(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

// nextMessage reads the next stream frame, which must be a Message on id,
// and returns its body and metadata.
func (c *rawClient) nextMessage(id uint64) ([]byte, map[string]string) {
	c.t.Helper()
	f, _ := c.nextOf()
	require.Equal(c.t, protocol.FrameMessage, f.typ, "%+v", f)
	require.Equal(c.t, id, f.id)
	return f.body, f.md
}

// nextError reads the next stream frame, which must be an Error on id.
func (c *rawClient) nextError(id uint64) *protocol.ErrorFrame {
	c.t.Helper()
	f, _ := c.nextOf()
	require.Equal(c.t, protocol.FrameError, f.typ, "%+v", f)
	require.Equal(c.t, id, f.id)
	return f.err
}

// nextEnd reads the next stream frame, which must be End on id, and
// returns its trailers.
func (c *rawClient) nextEnd(id uint64) map[string]string {
	c.t.Helper()
	f, _ := c.nextOf()
	require.Equal(c.t, protocol.FrameEnd, f.typ, "%+v", f)
	require.Equal(c.t, id, f.id)
	return f.md
}

func requireCode(t *testing.T, want protocol.Code, err error) {
	t.Helper()
	e, ok := status.FromError(err)
	require.True(t, ok, "not a status error: %v", err)
	require.Equal(t, want, e.Code, "%v", err)
}

// TestTypedStreams runs the three typed shapes with message.JSON, and a
// bidi stream with protomsg, over TCP with the raw client: messages are
// decoded and encoded with the method's codecs, headers and trailers are
// AddResponseMetadata's, the client's half-close (EndStream or End) is
// io.EOF, and the values Receive returns are the handler's own.
func TestTypedStreams(t *testing.T) {
	ts, c, _ := startTyped(t)

	t.Run("server-streaming", func(t *testing.T) {
		id := c.open("ts", "Count", js(t, tcount{N: 3}), true)
		for i := range 3 {
			b, md := c.nextMessage(id)
			assert.JSONEq(t, string(js(t, tpoint{X: i})), string(b))
			if i == 0 {
				assert.Equal(t, map[string]string{"h": "1"}, md, "the headers, on the first message")
			} else {
				assert.Nil(t, md)
			}
		}
		assert.Equal(t, map[string]string{"t": "2"}, c.nextEnd(id))
	})
	t.Run("client-streaming", func(t *testing.T) {
		id := c.open("ts", "Sum", js(t, tpoint{X: 1}), false)
		c.msg(id, js(t, tpoint{X: 20}), false)
		c.msg(id, js(t, tpoint{X: 300}), true)
		b, _ := c.nextMessage(id)
		assert.JSONEq(t, `{"n":321}`, string(b), "every value kept across Receives is intact")
		c.nextEnd(id)
	})
	t.Run("bidi, half-closed by End", func(t *testing.T) {
		id := c.open("ts", "Echo", nil, false)
		for i := range 5 {
			c.msg(id, js(t, tpoint{X: i * 10}), false)
			b, _ := c.nextMessage(id)
			assert.JSONEq(t, string(js(t, tpoint{X: i*10 + 1})), string(b))
		}
		c.end(id)
		c.nextEnd(id)
	})
	t.Run("bidi with protomsg", func(t *testing.T) {
		sv := protomsg.Codec[wrapperspb.StringValue]()
		enc := func(s string) []byte {
			b, err := sv.AppendMarshal(nil, wrapperspb.String(s))
			require.NoError(t, err)
			return b
		}
		id := c.open("ts", "Proto", enc("a"), false)
		c.msg(id, enc("b"), true)
		for _, want := range []string{"re: a", "re: b"} {
			b, _ := c.nextMessage(id)
			var got wrapperspb.StringValue
			require.NoError(t, proto.Unmarshal(b, &got))
			assert.Equal(t, want, got.GetValue())
		}
		c.nextEnd(id)
	})
	assert.Zero(t, ts.Stats().ProtocolViolations)
	requireLedgerZero(t, ts)
}

// TestTypedStreamSendReusesItsBuffer: a typed Send encodes into the
// stream's buffer, reused from message to message (the raw Send copied
// the previous one out), so a steady stream allocates no buffer per
// message.
func TestTypedStreamSendReusesItsBuffer(t *testing.T) {
	ts, c, p := startTyped(t)
	id := c.open("ts", "Count", js(t, tcount{N: 8}), true)
	for i := range 8 {
		b, _ := c.nextMessage(id)
		assert.JSONEq(t, string(js(t, tpoint{X: i})), string(b), "the reused buffer never corrupts a message sent")
	}
	c.nextEnd(id)
	var first *byte
	for i := range 8 {
		b := <-p.bufs
		require.NotZero(t, cap(b))
		if i == 0 {
			first = unsafe.SliceData(b)
			continue
		}
		assert.Same(t, first, unsafe.SliceData(b), "Send %d encoded into a new buffer", i)
	}
	requireLedgerZero(t, ts)
}

// TestTypedStreamMessageThatDoesNotDecode: a client message that the
// method's codec rejects fails the call with InvalidArgument, strictly:
// a server stream's request is refused without running its handler; in a
// client or bidi stream, the Receive that met it and every later Receive
// and Send return that error, nothing more is sent, and the stream ends
// with it even when the handler returns nil or a response.
func TestTypedStreamMessageThatDoesNotDecode(t *testing.T) {
	ts, c, p := startTyped(t)
	bad := []byte(`{"y":1}`) // an unknown field: message.JSON refuses it

	t.Run("server-streaming request", func(t *testing.T) {
		id := c.open("ts", "Count", bad, true)
		e := c.nextError(id)
		assert.Equal(t, protocol.CodeInvalidArgument, e.Code, "%+v", e)
		assert.Contains(t, e.Message, "json")
		assert.Empty(t, p.entered, "the handler did not run")
	})
	t.Run("client-streaming, handler swallows the error", func(t *testing.T) {
		id := c.open("ts", "Swallow", js(t, tpoint{X: 1}), false)
		c.msg(id, bad, false)
		c.msg(id, js(t, tpoint{X: 2}), true)
		e := c.nextError(id)
		assert.Equal(t, protocol.CodeInvalidArgument, e.Code, "not the handler's response: %+v", e)
		first, again := <-p.errs, <-p.errs
		requireCode(t, protocol.CodeInvalidArgument, first)
		assert.Equal(t, first, again, "a later Receive returns the same failure")
	})
	t.Run("bidi, handler swallows the error", func(t *testing.T) {
		id := c.open("ts", "SwallowBidi", js(t, tpoint{X: 1}), false)
		b, _ := c.nextMessage(id)
		assert.JSONEq(t, `{"x":1}`, string(b))
		c.msg(id, bad, false)
		recvErr, sendErr := <-p.errs, <-p.errs
		requireCode(t, protocol.CodeInvalidArgument, recvErr)
		assert.Equal(t, recvErr, sendErr, "Send after the failure returns it and sends nothing")
		e := c.nextError(id) // not the Message {"x":99}
		assert.Equal(t, protocol.CodeInvalidArgument, e.Code, "%+v", e)
		c.msg(id, js(t, tpoint{X: 3}), true) // crossed the end: ignored
	})
	t.Run("bidi, handler returns the error", func(t *testing.T) {
		id := c.open("ts", "Echo", []byte("not json"), false)
		e := c.nextError(id)
		assert.Equal(t, protocol.CodeInvalidArgument, e.Code, "%+v", e)
	})
	assert.Zero(t, ts.Stats().ProtocolViolations)
	requireLedgerZero(t, ts)
}

// TestTypedStreamSendThatDoesNotEncode: a message the response codec
// cannot encode is the server's fault: Send returns Internal and sends
// nothing, and the stream stays usable; a client-streaming response that
// does not encode ends the call with Internal.
func TestTypedStreamSendThatDoesNotEncode(t *testing.T) {
	ts, c, p := startTyped(t)
	t.Run("Send", func(t *testing.T) {
		id := c.open("ts", "BadSend", js(t, tpoint{X: 3}), false)
		requireCode(t, protocol.CodeInternal, <-p.errs)
		b, _ := c.nextMessage(id) // the next Send's, nothing before it
		assert.JSONEq(t, `{"v":3}`, string(b))
		c.msg(id, js(t, tpoint{X: 4}), true)
		requireCode(t, protocol.CodeInternal, <-p.errs)
		b, _ = c.nextMessage(id)
		assert.JSONEq(t, `{"v":4}`, string(b))
		c.nextEnd(id)
	})
	t.Run("client-streaming response", func(t *testing.T) {
		id := c.open("ts", "BadResp", js(t, tpoint{X: 1}), true)
		e := c.nextError(id)
		assert.Equal(t, protocol.CodeInternal, e.Code, "%+v", e)
		assert.Contains(t, e.Message, "encoding")
	})
	requireLedgerZero(t, ts)
}

// TestTypedStreamCancelledMidStream: a Cancel in the middle of a typed
// bidi stream ends the handler's Receive with the context's error, and
// the call gives everything back.
func TestTypedStreamCancelledMidStream(t *testing.T) {
	ts, c, p := startTyped(t)
	id := c.open("ts", "Wait", js(t, tpoint{X: 5}), false)
	b, _ := c.nextMessage(id)
	assert.JSONEq(t, `{"x":5}`, string(b))
	c.cancel(id)
	require.ErrorIs(t, <-p.errs, context.Canceled)
	assert.Equal(t, protocol.CodeCanceled, c.nextError(id).Code)
	requireLedgerZero(t, ts)
	// The connection serves the next stream.
	id = c.open("ts", "Echo", js(t, tpoint{X: 1}), true)
	b, _ = c.nextMessage(id)
	assert.JSONEq(t, `{"x":2}`, string(b))
	c.nextEnd(id)
}

// TestTypedStreamRegistrationPanicsOnNil: a nil handler or codec is a
// programmer error, caught at registration as for the typed unary Handle.
func TestTypedStreamRegistrationPanicsOnNil(t *testing.T) {
	mux := server.NewMux()
	pt := message.JSON[tpoint]()
	assert.Panics(t, func() {
		server.HandleServerStream[tpoint, tpoint](mux, "s", "a", pt, pt, nil)
	})
	assert.Panics(t, func() {
		server.HandleClientStream(mux, "s", "b", nil, pt, func(context.Context, *server.ClientStream[tpoint]) (*tpoint, error) { return nil, nil })
	})
	assert.Panics(t, func() {
		server.HandleBidiStream(mux, "s", "c", pt, nil, func(context.Context, *server.BidiStream[tpoint, tpoint]) error { return nil })
	})
}
