package server_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/server"
)

// pingPong writes a Ping and returns the frames before its Pong: the
// writer is in order, so they are everything the server wrote before it
// read the Ping.
func (c *rawClient) pingPong() []streamFrame {
	c.t.Helper()
	f := protocol.AppendPing(nil, [8]byte{1})
	c.write(f)
	var before []streamFrame
	for {
		h, payload := c.read()
		switch h.Type {
		case protocol.FramePong:
			return before
		case protocol.FrameWindowUpdate:
			sf := streamFrame{typ: h.Type, id: h.ID}
			require.NoError(c.t, protocol.ParseWindowUpdate(h, payload, &sf.wu))
			before = append(before, sf)
		default:
			c.t.Fatalf("unexpected %v frame before the Pong", h.Type)
		}
	}
}

// TestSlowConsumerHoldsAtMostItsWindow: a handler that does not receive
// lets the client fill the stream's 64 KiB window, and no more (the next
// message is a violation, so the server never buffers more than the
// window); each Receive returns credit in quarter-window batches, and the
// client may then send exactly what was returned.
func TestSlowConsumerHoldsAtMostItsWindow(t *testing.T) {
	s := startServer(t, server.Options{})
	h := s.mux.st
	c := dialStream(t, s.addr)
	id := c.open("stream", "Slow", nil, false)
	<-h.entered
	kib := bytes.Repeat([]byte("k"), 1024)
	for range protocol.InitialStreamWindow / 1024 {
		c.msg(id, kib, false) // credit positive before each: allowed
	}
	assert.Empty(t, c.pingPong(), "the server read the 64 messages; nothing taken, nothing returned")
	take := func(n int) {
		t.Helper()
		for i := range n {
			h.take <- struct{}{}
			require.Len(t, <-h.got, 1024, "message %d", i)
		}
	}
	wu := func(n uint32) []streamFrame {
		return []streamFrame{{typ: protocol.FrameWindowUpdate, id: id, wu: protocol.WindowUpdate{Returned: n}}}
	}
	take(1)
	assert.Equal(t, wu(1024), c.pingPong(), "the window was exhausted: the first message taken is returned at once")
	take(15)
	assert.Empty(t, c.pingPong(), "15 KiB taken: below a quarter of the window, nothing returned yet")
	take(1)
	assert.Equal(t, wu(16<<10), c.pingPong(),
		"16 KiB taken: a quarter of the stream window returned; the connection's 1 MiB window is far from its quarter")
	for range 17 {
		c.msg(id, kib, false) // exactly the returned credit
	}
	assert.Empty(t, c.pingPong())
	assert.Zero(t, s.Stats().ProtocolViolations)
	c.msg(id, kib, false) // one more: the window is full
	e := c.expectClosed()
	require.NotNil(t, e)
	assert.Contains(t, e.Message, "no credit")
	assert.Equal(t, uint64(1), s.Stats().ProtocolViolations)
	assert.ErrorIs(t, <-h.recvErr, context.Canceled)
	requireLedgerZero(t, s)
}

// TestStreamViolations: what the spec makes a violation closes the
// connection with a connection Error; a late frame for an ended stream
// does not.
func TestStreamViolations(t *testing.T) {
	s := startServer(t, server.Options{})
	h := s.mux.st
	withMD := func() protocol.Metadata {
		var md protocol.Metadata
		require.NoError(t, md.Add("k", []byte("v")))
		return md
	}
	cases := map[string]func(c *rawClient){
		"Message for a never-opened id": func(c *rawClient) { c.msg(99, []byte("x"), false) },
		"End for a never-opened id":     func(c *rawClient) { c.end(99) },
		"WindowUpdate for a never-opened id": func(c *rawClient) {
			c.windowUpdate(99, 0, 1)
		},
		"Message after the half-close": func(c *rawClient) {
			id := c.open("stream", "Hold", nil, true)
			<-h.entered
			c.msg(id, []byte("x"), false)
		},
		"End after the half-close": func(c *rawClient) {
			id := c.open("stream", "Hold", nil, false)
			<-h.entered
			c.end(id)
			c.end(id)
		},
		"a client Message with HasMetadata": func(c *rawClient) {
			id := c.open("stream", "Hold", nil, false)
			<-h.entered
			f, err := protocol.AppendMessage(nil, id, &protocol.Message{Metadata: withMD(), Body: []byte("x")})
			require.NoError(t, err)
			c.write(f)
		},
		"a client End with HasMetadata": func(c *rawClient) {
			id := c.open("stream", "Hold", nil, false)
			<-h.entered
			f, err := protocol.AppendEnd(nil, id, &protocol.End{Metadata: withMD()})
			require.NoError(t, err)
			c.write(f)
		},
		"a double return on the connection": func(c *rawClient) { c.windowUpdate(0, 1, 0) },
		"a double return on a stream": func(c *rawClient) {
			id := c.open("stream", "Hold", nil, false)
			<-h.entered
			c.windowUpdate(id, 1, 0)
		},
		"a window above MaxWindow": func(c *rawClient) { c.windowUpdate(0, 0, protocol.MaxWindow) },
		"a stream message without credit": func(c *rawClient) {
			id := c.open("stream", "Hold", bytes.Repeat([]byte("x"), protocol.InitialStreamWindow), false)
			<-h.entered
			c.msg(id, []byte("x"), false)
		},
	}
	violations := s.Stats().ProtocolViolations
	for name, run := range cases {
		c := dialStream(t, s.addr)
		run(c)
		e := c.expectClosed()
		require.NotNil(t, e, "%s: a connection Error before the close", name)
		assert.Contains(t, e.Message, "protocol violation", name)
		violations++
		assert.Equal(t, violations, s.Stats().ProtocolViolations, name)
		requireLedgerZero(t, s)
		for len(h.ctxErr) > 0 {
			<-h.ctxErr
		}
	}

	t.Run("late frames for an ended stream are ignored", func(t *testing.T) {
		c := dialStream(t, s.addr)
		id := c.open("stream", "Echo", []byte("a"), true)
		f, _ := c.nextOf()
		require.Equal(t, "a", string(f.body))
		f, _ = c.nextOf()
		require.Equal(t, protocol.FrameEnd, f.typ)
		// The client's view: its half-close crossed nothing, but a peer
		// may send frames that crossed the End.
		c.windowUpdate(id, 1, 0)
		assert.Empty(t, c.pingPong())
		// A stream the server ended while the client still sent: its late
		// message is dropped, and its bytes go back to the connection.
		id = c.open("stream", "Meta", nil, false)
		f, _ = c.nextOf()
		require.Equal(t, protocol.FrameMessage, f.typ)
		f, _ = c.nextOf()
		require.Equal(t, protocol.FrameEnd, f.typ)
		c.msg(id, []byte("xyz"), false)
		c.end(id)
		// Dropping returns at once, with the charge of Echo's "a" that
		// the connection window was keeping for its batch.
		assert.Empty(t, c.readUntilReturned(cost(1)+cost(3)))
		assert.Empty(t, c.pingPong())
		assert.Nil(t, c.call("echo", "Say", []byte("ok")).err)
		assert.Equal(t, violations, s.Stats().ProtocolViolations)
	})
}
