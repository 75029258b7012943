package client_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/client"
	"github.com/sluicerpc/sluice/protocol"
)

// writeDeclared writes a Message on id whose one-byte compressed body
// declares origLen bytes.
func (pc *peerConn) writeDeclared(t testing.TB, id uint64, origLen uint32) {
	t.Helper()
	f, err := protocol.AppendMessage(nil, id, &protocol.Message{Body: []byte{0}, Compressed: true, CodecID: 1, OriginalLength: origLen})
	require.NoError(t, err)
	pc.write(t, f)
}

// TestAMessageChargedAboveMaxWindowIsAViolation: a server's Message
// declaring more than protocol.MaxMessageCharge (2^32-1 in 25 bytes, or
// MaxWindow+1) is a protocol violation: the client closes the connection
// and the stream's Receive fails at once. The client charged it and then
// could not encode its return, so the credit was lost and the stream
// stalled.
func TestAMessageChargedAboveMaxWindowIsAViolation(t *testing.T) {
	for _, origLen := range []uint32{1<<32 - 1, protocol.MaxWindow + 1} {
		p := startStreamPeer(t, streamCaps)
		c := dial(t, client.Options{}, p.addr)
		s, err := c.NewStream(ctxTimeout(t, time.Minute), "svc/M", client.StreamBidi)
		require.NoError(t, err)
		pc := p.next(t)
		h, _ := pc.request(t)
		pc.writeDeclared(t, h.ID, origLen)
		pc.closed(t)
		_, err = s.Receive()
		require.Error(t, err, "declared %d", origLen)
		s.Close()
	}
}

// TestTheLargestChargeIsReturnedWhole: a message charged exactly
// MaxMessageCharge borrows on a connection window that already holds
// 1 KiB; once the stream has refused it (no codec was negotiated), the
// client owes the server more than one WindowUpdate
// carries, and returns all of it.
func TestTheLargestChargeIsReturnedWhole(t *testing.T) {
	p := startStreamPeer(t, streamCaps)
	c := dial(t, client.Options{}, p.addr)
	s, err := c.NewStream(ctxTimeout(t, time.Minute), "svc/M", client.StreamBidi)
	require.NoError(t, err)
	defer s.Close()
	pc := p.next(t)
	h, _ := pc.request(t)
	pc.writeMessage(t, h.ID, string(make([]byte, 1024)))
	pc.writeDeclared(t, h.ID, protocol.MaxWindow)
	// The stream fails on the message of a codec never negotiated (the
	// client may tell before it hands out the first one).
	for range 2 {
		if _, err = s.Receive(); err != nil {
			break
		}
	}
	require.Error(t, err, "a message of a codec never negotiated")
	var conn uint64
	frames := 0
	for conn < protocol.MaxWindow+1024 {
		hh, payload := pc.read(t)
		if hh.Type != protocol.FrameWindowUpdate || hh.ID != 0 {
			continue
		}
		var w protocol.WindowUpdate
		require.NoError(t, protocol.ParseWindowUpdate(hh, payload, &w))
		conn += uint64(w.Returned)
		frames++
	}
	assert.Equal(t, uint64(protocol.MaxWindow+1024), conn, "every byte charged to the connection, returned")
	assert.GreaterOrEqual(t, frames, 2)
}
