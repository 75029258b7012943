package server_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/server"
)

// Every large frame's MaxFrameMemory charge comes back when the frame is
// refused after its header was read, whatever the violation found in its
// payload: the connection ends, and the gauge returns to zero. (A frame
// refused this way kept its charge for good: 64 connections each sending
// one 4 MiB frame exhausted a 256 MiB budget until restart, and every
// later request over the read-ahead was refused.)
func TestARefusedLargeFrameGivesItsMemoryBack(t *testing.T) {
	const size = 256 << 10 // beyond every read-ahead
	pad := make([]byte, size)
	frames := map[string][]byte{}
	// A Request whose body is fine but whose method ids name nothing,
	// with a trailing flag the type does not allow.
	req, err := protocol.AppendRequest(nil, 1, &protocol.Request{Service: 0, Method: 0, Body: pad})
	require.NoError(t, err)
	bad := append([]byte(nil), req...)
	bad[2] |= 0x80 // an unknown flag
	frames["a Request with an unknown flag"] = bad
	cut := append([]byte(nil), req...)
	frames["a Request whose payload is malformed"] = append(cut[:protocol.HeaderSize], append([]byte{0xff, 0xff, 0xff}, pad...)[:len(req)-protocol.HeaderSize]...)
	msg, err := protocol.AppendMessage(nil, 1, &protocol.Message{Body: pad})
	require.NoError(t, err)
	frames["a Message without streams"] = msg
	frames["a Pong of the wrong size"] = append(protocol.AppendHeader(nil, protocol.Header{Type: protocol.FramePong, Length: size}), pad...)
	frames["a HandshakeAck from a client"] = append(protocol.AppendHeader(nil, protocol.Header{Type: protocol.FrameHandshakeAck, Length: size}), pad...)
	for name, frame := range frames {
		t.Run(name, func(t *testing.T) {
			s := startServer(t, server.Options{MaxFrameMemory: 8 << 20})
			c := dialRaw(t, s.addr)
			c.write(frame)
			c.expectClosed()
			require.Eventually(t, func() bool { return s.Stats().FrameMemory == 0 }, 20*time.Second, time.Millisecond,
				"frame memory after the connection ended: %d", s.Stats().FrameMemory)
		})
	}
}
