package server_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/server"
)

// Before the handshake completes, the largest legal frame is the
// handshake's own bound: a first frame declaring more (here 1 MiB, well
// under the connection's 4 MiB maximum) is a violation at once. The server
// neither waits for the megabyte nor buffers for it; the handshake timeout
// (an hour here) plays no part.
func TestFirstFrameAboveTheHandshakeBoundIsRefusedAtOnce(t *testing.T) {
	s := startServer(t, server.Options{HandshakeTimeout: time.Hour})
	c := dialNoHandshake(t, s.addr)
	lim := protocol.DefaultLimits()
	require.Less(t, protocol.MaxHandshakeSize(lim), uint32(1<<20))
	c.write(protocol.AppendHeader(nil, protocol.Header{Type: protocol.FrameHandshake, Length: 1 << 20}))
	e := c.expectClosed()
	require.NotNil(t, e, "a connection Error before the close")
	require.Equal(t, protocol.CodeInternal, e.Code)
	require.Contains(t, e.Message, "protocol violation")
	require.EqualValues(t, 1, s.Stats().ProtocolViolations)
}

// A handshake at its largest legal size (the most codecs, the longest
// names, the largest auth payload) is still accepted, and afterwards the
// connection carries frames up to its full maximum size.
func TestTheLargestHandshakeIsAcceptedThenFullFrames(t *testing.T) {
	s := startServer(t, server.Options{})
	c := dialNoHandshake(t, s.addr)
	codecs := make([]string, protocol.MaxCodecs)
	for i := range codecs {
		name := []byte("codec-" + string(rune('a'+i)))
		for len(name) < protocol.MaxCodecNameLen {
			name = append(name, 'x')
		}
		codecs[i] = string(name)
	}
	frame, err := protocol.AppendHandshake(nil, &protocol.Handshake{
		Version: protocol.Version, MaxFrameSize: 4 << 20, Codecs: codecs,
		Auth: make([]byte, protocol.DefaultLimits().MaxAuthBytes),
	})
	require.NoError(t, err)
	c.write(frame)
	h, payload := c.read()
	require.Equal(t, protocol.FrameHandshakeAck, h.Type)
	require.NoError(t, protocol.ParseHandshakeAck(h, payload, &c.ack))
	body := make([]byte, 3<<20) // well above the handshake bound
	r := c.call("echo", "Say", body)
	require.Equal(t, len(body), len(r.body), "a 3 MiB request and its answer")
}

// After a connection-level Error the server sends nothing more on the
// connection: the answers of calls still in flight (here a held call,
// cancelled by the connection's end) are not written after it.
func TestNothingFollowsAConnectionError(t *testing.T) {
	s := startServer(t, server.Options{})
	c := dialRaw(t, s.addr)
	c.send("echo", "Hold", nil, nil)
	<-s.mux.entered
	// A Ping with a payload of the wrong length is a violation.
	frame := protocol.AppendHeader(nil, protocol.Header{Type: protocol.FramePing, Length: 3})
	c.write(append(frame, 1, 2, 3))
	var after []protocol.Header
	seen := false
	for {
		h, _, err := c.readErr()
		if err != nil {
			break
		}
		if seen {
			after = append(after, h)
		}
		if h.Type == protocol.FrameError && h.ID == 0 {
			seen = true
		}
	}
	require.True(t, seen, "a connection Error")
	require.Empty(t, after, "frames after the connection Error")
	<-s.mux.ctxErr
}
