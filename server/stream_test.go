package server_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/server"
)

// TestStreamShapes runs each stream shape over TCP with the raw client,
// and the shape mismatches, which are answered on their call.
func TestStreamShapes(t *testing.T) {
	s := startServer(t, server.Options{})
	c := dialStream(t, s.addr)

	t.Run("bidi", func(t *testing.T) {
		id := c.open("stream", "Echo", []byte("a"), false)
		c.msg(id, []byte("bc"), false)
		c.msg(id, nil, true)
		for _, want := range []string{"a", "bc", ""} {
			f, _ := c.nextOf()
			require.Equal(t, protocol.FrameMessage, f.typ, "%+v", f)
			assert.Equal(t, id, f.id)
			assert.Equal(t, want, string(f.body))
		}
		f, _ := c.nextOf()
		assert.Equal(t, protocol.FrameEnd, f.typ)
		assert.Equal(t, id, f.id)
	})
	t.Run("bidi half-closed by End", func(t *testing.T) {
		id := c.open("stream", "Echo", nil, false)
		c.msg(id, []byte("x"), false)
		c.end(id)
		f, _ := c.nextOf()
		assert.Equal(t, "x", string(f.body))
		f, _ = c.nextOf()
		assert.Equal(t, protocol.FrameEnd, f.typ)
	})
	t.Run("client-streaming", func(t *testing.T) {
		id := c.open("stream", "Sum", []byte("12"), false)
		c.msg(id, []byte("345"), true)
		f, _ := c.nextOf()
		require.Equal(t, protocol.FrameMessage, f.typ)
		assert.Equal(t, "5", string(f.body))
		f, _ = c.nextOf()
		assert.Equal(t, protocol.FrameEnd, f.typ)
		assert.Equal(t, id, f.id)
	})
	t.Run("server-streaming", func(t *testing.T) {
		id := c.open("stream", "Count", []byte("3"), true)
		for _, want := range []string{"0", "1", "2"} {
			f, _ := c.nextOf()
			require.Equal(t, protocol.FrameMessage, f.typ)
			assert.Equal(t, id, f.id)
			assert.Equal(t, want, string(f.body))
		}
		f, _ := c.nextOf()
		assert.Equal(t, protocol.FrameEnd, f.typ)
	})
	t.Run("headers on the first message, trailers on End", func(t *testing.T) {
		c.open("stream", "Meta", nil, true)
		f, _ := c.nextOf()
		assert.Equal(t, map[string]string{"h": "1"}, f.md)
		f, _ = c.nextOf()
		require.Equal(t, protocol.FrameEnd, f.typ)
		assert.Equal(t, map[string]string{"t": "2"}, f.md)
	})
	t.Run("panic", func(t *testing.T) {
		id := c.open("stream", "Panic", nil, true)
		f, _ := c.nextOf()
		require.Equal(t, protocol.FrameError, f.typ)
		assert.Equal(t, id, f.id)
		assert.Equal(t, protocol.CodeInternal, f.err.Code)
	})
	t.Run("a stream method called as a unary call", func(t *testing.T) {
		r := c.call("stream", "Echo", []byte("x"))
		require.NotNil(t, r.err)
		assert.Equal(t, protocol.CodeUnimplemented, r.err.Code)
	})
	t.Run("a unary method called as a stream", func(t *testing.T) {
		id := c.open("echo", "Say", []byte("x"), true)
		f := c.nextStream()
		require.Equal(t, protocol.FrameError, f.typ)
		assert.Equal(t, id, f.id)
		assert.Equal(t, protocol.CodeUnimplemented, f.err.Code)
		// The refused opening message's charge goes back to the
		// connection at once, with the batch the connection window was
		// keeping: the charges of the 7 messages taken by the subtests
		// above (a, bc, the empty last one, x, 12, 345, 3: the least
		// charge each), below a quarter of its 1 MiB.
		f = c.nextStream()
		require.Equal(t, protocol.FrameWindowUpdate, f.typ)
		assert.Equal(t, uint64(0), f.id)
		assert.Equal(t, 7*cost(1)+cost(1), f.wu.Returned)
	})
	t.Run("server-streaming without its half-close", func(t *testing.T) {
		c.open("stream", "Count", []byte("1"), false)
		f := c.nextStream()
		require.Equal(t, protocol.FrameError, f.typ)
		assert.Equal(t, protocol.CodeInvalidArgument, f.err.Code)
		f = c.nextStream()
		require.Equal(t, protocol.FrameWindowUpdate, f.typ)
		assert.Equal(t, protocol.WindowUpdate{Returned: cost(1)}, f.wu, "the opening message's charge, at once")
	})
	// The connection is still usable.
	assert.Nil(t, c.call("echo", "Say", []byte("ok")).err)
	assert.Zero(t, s.Stats().ProtocolViolations)
	requireLedgerZero(t, s)
}
