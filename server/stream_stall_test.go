package server_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/server"
)

// TestAStreamWhoseWindowStaysClosedEndsAtTheStallTimeout (issue 25
// section 2): a client opens a server stream and never returns credit,
// while it keeps the connection alive. The handler sends exactly the 64
// KiB window (1,024 messages of the minimum cost), its next Send waits
// for the stall timeout and fails, and the client gets ResourceExhausted
// naming the timeout; the call slot, the admission permit and every
// budget come back, and the connection serves the next stream. Before,
// the stream held its slot until the client went away.
func TestAStreamWhoseWindowStaysClosedEndsAtTheStallTimeout(t *testing.T) {
	s := startServer(t, server.Options{StreamStallTimeout: 200 * time.Millisecond})
	c := dialStream(t, s.addr)
	id := c.open("stream", "Count", []byte("5000"), true)
	messages := 0
	var end streamFrame
	for {
		f, _ := c.nextOf()
		require.Equal(t, id, f.id)
		if f.typ != protocol.FrameMessage {
			end = f
			break
		}
		messages++
	}
	assert.Equal(t, protocol.InitialStreamWindow/protocol.MinMessageCost, messages, "exactly the window went out")
	require.Equal(t, protocol.FrameError, end.typ, "%+v", end)
	assert.Equal(t, protocol.CodeResourceExhausted, end.err.Code)
	assert.Contains(t, end.err.Message, "StreamStallTimeout")
	assert.Empty(t, end.err.Reason, "the handler ran: no refusal reason")
	assert.Equal(t, uint64(1), s.Stats().StreamStalls)
	requireLedgerZero(t, s)

	// The connection is fine: a stream that fits the window completes.
	id = c.open("stream", "Count", []byte("3"), true)
	for _, want := range []string{"0", "1", "2"} {
		body, _ := c.nextMessage(id)
		assert.Equal(t, want, string(body))
	}
	c.nextEnd(id)
	assert.Equal(t, uint64(1), s.Stats().StreamStalls)
}

// TestAStreamWhoseClientReturnsCreditIsNeverStalled: a client that gives
// the window back each time it closes sees its stream of three windows
// complete, and nothing is counted as a stall.
func TestAStreamWhoseClientReturnsCreditIsNeverStalled(t *testing.T) {
	s := startServer(t, server.Options{StreamStallTimeout: time.Minute})
	c := dialStream(t, s.addr)
	const n = 3 * protocol.InitialStreamWindow / protocol.MinMessageCost // three windows
	id := c.open("stream", "Count", []byte("3072"), true)
	got, owed := 0, uint32(0)
	for {
		f, _ := c.nextOf()
		if f.typ == protocol.FrameEnd {
			break
		}
		require.Equal(t, protocol.FrameMessage, f.typ, "%+v", f)
		got++
		owed += protocol.MinMessageCost
		if owed == protocol.InitialStreamWindow { // the window is closed: give it back
			wu, _ := protocol.AppendWindowUpdate(nil, id, &protocol.WindowUpdate{Returned: owed})
			wu, _ = protocol.AppendWindowUpdate(wu, 0, &protocol.WindowUpdate{Returned: owed})
			c.write(wu)
			owed = 0
		}
	}
	assert.Equal(t, n, got)
	assert.Zero(t, s.Stats().StreamStalls)
	requireLedgerZero(t, s)
}
