package client_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/client"
	"github.com/sluicerpc/sluice/protocol"
)

// TestStreamWindowGrowsAfterTheRequest: the client grows each stream's
// receive window to Options.StreamWindow with a WindowUpdate right after
// the stream's Request (before it, the id would be one the server never
// saw opened), and the server may then fill the grown window: a message
// past it is the violation it was at 64 KiB.
func TestStreamWindowGrowsAfterTheRequest(t *testing.T) {
	const window = 256 << 10
	p := startStreamPeer(t, streamCaps)
	c := dial(t, client.Options{StreamWindow: window}, p.addr)
	s, err := c.NewStream(ctxTimeout(t, 10*time.Second), "svc/M", client.StreamBidi)
	require.NoError(t, err)
	defer s.Close()
	pc := p.next(t)
	h, _ := pc.request(t)
	id, w := pc.windowUpdate(t)
	assert.Equal(t, h.ID, id)
	assert.Equal(t, protocol.WindowUpdate{Growth: window - protocol.InitialStreamWindow}, w)
	for range 4 {
		pc.writeMessage(t, h.ID, strings.Repeat("w", window/4))
	}
	for range 4 {
		got, err := s.Receive()
		require.NoError(t, err)
		require.Len(t, got, window/4)
	}
	// Each Receive returned a quarter of the grown window on the stream
	// (and the four, a quarter of the connection's 1 MiB, on id 0).
	var streamUpdates int
	var conn uint32
	for streamUpdates < 4 || conn < window {
		id, w := pc.windowUpdate(t)
		if id == 0 {
			conn += w.Returned
			continue
		}
		assert.Equal(t, h.ID, id)
		assert.Equal(t, protocol.WindowUpdate{Returned: window / 4}, w)
		streamUpdates++
	}
	assert.Equal(t, uint32(window), conn)
}

// TestStreamWindowFillingTheGrownWindowThenMoreIsAViolation: beyond the
// grown window the server's next message has no credit.
func TestStreamWindowFillingTheGrownWindowThenMoreIsAViolation(t *testing.T) {
	const window = 256 << 10
	p := startStreamPeer(t, streamCaps)
	c := dial(t, client.Options{StreamWindow: window}, p.addr)
	s, err := c.NewStream(ctxTimeout(t, 10*time.Second), "svc/M", client.StreamBidi)
	require.NoError(t, err)
	defer s.Close()
	pc := p.next(t)
	h, _ := pc.request(t)
	pc.windowUpdate(t)
	pc.writeMessage(t, h.ID, strings.Repeat("w", window))
	pc.writeMessage(t, h.ID, "x")
	pc.closed(t)
}

// TestStreamWindowOption: Options.StreamWindow below the initial window or
// above MaxWindow is refused by Dial.
func TestStreamWindowOption(t *testing.T) {
	p := startStreamPeer(t, streamCaps)
	for _, w := range []int{-1, protocol.InitialStreamWindow - 1, protocol.MaxWindow + 1} {
		_, err := client.Dial(ctxTimeout(t, 5*time.Second), []string{p.addr}, client.Options{StreamWindow: w})
		require.Error(t, err, "StreamWindow %d", w)
		assert.Contains(t, err.Error(), "StreamWindow")
	}
}
