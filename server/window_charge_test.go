package server_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/server"
)

// compressedMessage is a Message frame on id whose one-byte compressed
// body declares origLen bytes: 25 bytes for 2^32-1.
func compressedMessage(t testing.TB, id uint64, origLen uint32) []byte {
	t.Helper()
	f, err := protocol.AppendMessage(nil, id, &protocol.Message{Body: []byte{0}, Compressed: true, CodecID: 1, OriginalLength: origLen})
	require.NoError(t, err)
	return f
}

// TestAMessageChargedAboveMaxWindowIsAViolation: a compressed Message
// declaring more than protocol.MaxMessageCharge (here 2^32-1 in a 25-byte
// frame, and MaxWindow+1) is a protocol violation answered by a connection
// Error, wherever it lands: a live unary call's id, a finished id, an id
// below the last one, a live stream, a stream Request's first message, a
// connection that negotiated no codec. It ended the server process: the
// charge, returned in one WindowUpdate, did not encode, and the writer
// panicked on the read loop. The server serves the next connection.
func TestAMessageChargedAboveMaxWindowIsAViolation(t *testing.T) {
	const huge = 1<<32 - 1
	for _, tt := range []struct {
		name    string
		origLen uint32
		attack  func(c *rawClient, origLen uint32)
	}{
		{"a live unary call", huge, func(c *rawClient, origLen uint32) {
			id := c.send("echo", "Hold", nil, nil)
			c.write(compressedMessage(c.t, id, origLen))
		}},
		{"a finished call", huge, func(c *rawClient, origLen uint32) {
			r := c.call("echo", "Say", []byte("hi"))
			require.Nil(c.t, r.err)
			c.write(compressedMessage(c.t, 1, origLen))
		}},
		{"an id below the last one", huge, func(c *rawClient, origLen uint32) {
			c.send("echo", "Hold", nil, nil)
			c.send("echo", "Hold", nil, nil)
			c.write(compressedMessage(c.t, 1, origLen))
		}},
		{"a live stream", protocol.MaxWindow + 1, func(c *rawClient, origLen uint32) {
			id := c.open("stream", "Slow", nil, false)
			c.write(compressedMessage(c.t, id, origLen))
		}},
		{"a stream Request's first message", huge, func(c *rawClient, origLen uint32) {
			c.send("stream", "Slow", []byte{0}, func(r *protocol.Request) {
				r.Stream, r.HasMessage = true, true
				r.Compressed, r.CodecID, r.OriginalLength = true, 1, origLen
			})
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := startServer(t, server.Options{})
			c := dialStream(t, s.addr)
			tt.attack(c, tt.origLen)
			e := c.expectClosed()
			require.NotNil(t, e, "a connection Error before the close")
			assert.Contains(t, e.Message, "protocol violation")
			assert.EqualValues(t, 1, s.Stats().ProtocolViolations)
			r := dialRaw(t, s.addr).call("echo", "Say", []byte("still here"))
			assert.Nil(t, r.err)
			assert.Equal(t, "still here", string(r.body))
		})
	}
}

// TestTheLargestChargeIsReturnedWhole: a message charged exactly
// MaxMessageCharge (a compressed body declaring MaxWindow bytes) may
// borrow, here on a connection window already holding 1 KiB; dropped
// unread (the stream ended), the connection window owes more than one
// WindowUpdate carries, and the server returns all of it, in two frames.
// The connection then carries the next message as any other.
func TestTheLargestChargeIsReturnedWhole(t *testing.T) {
	s := startServer(t, server.Options{})
	h := s.mux.st
	c := dialStream(t, s.addr)
	id := c.open("stream", "Slow", nil, false)
	<-h.entered
	c.msg(id, make([]byte, 1024), false)
	c.write(compressedMessage(t, id, protocol.MaxWindow))
	c.end(id) // a Message now would be a second borrow
	// The handler takes the 1 KiB message, then the declared one, which
	// it cannot have: no codec was negotiated.
	h.take <- struct{}{}
	require.Len(t, within(t, h.got), 1024)
	h.take <- struct{}{}
	require.Error(t, within(t, h.recvErr))
	var conn uint64
	frames := 0
	for conn < protocol.MaxWindow+1024 {
		f := c.nextStream()
		require.Nil(t, f.err)
		if f.typ == protocol.FrameWindowUpdate && f.id == 0 {
			conn += uint64(f.wu.Returned)
			frames++
		}
	}
	assert.Equal(t, uint64(protocol.MaxWindow+1024), conn, "every byte charged to the connection, returned")
	assert.GreaterOrEqual(t, frames, 2, "more than one frame carries it")
	id2 := c.open("stream", "Echo", []byte("hello"), true)
	for {
		f := c.nextStream()
		if f.typ == protocol.FrameMessage && f.id == id2 {
			assert.Equal(t, "hello", string(f.body))
			break
		}
		if f.typ == protocol.FrameError {
			require.Equal(t, id, f.id, "%+v", f.err) // the declared message's stream: its codec is unknown
		}
	}
	assert.EqualValues(t, 0, s.Stats().ProtocolViolations)
}

// within receives from ch, failing the test after a minute instead of
// hanging it.
func within[T any](t testing.TB, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(time.Minute):
		t.Fatal("nothing received within a minute")
		panic("unreachable")
	}
}
