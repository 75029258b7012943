package server_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/server"
)

// partialRequest writes a Request for echo/Say whose body is declared
// bytes (zeros), but only sent bytes of that body, and returns the rest of
// the frame. The body comes last in a Request, so the frame is built from
// an empty request without materializing the body.
func (c *rawClient) partialRequest(declared, sent int) []byte {
	c.t.Helper()
	si, mi := c.method("echo", "Say")
	c.nextID++
	empty, err := protocol.AppendRequest(nil, c.nextID, &protocol.Request{Service: si, Method: mi})
	require.NoError(c.t, err)
	h, err := protocol.ParseHeader(empty[:protocol.HeaderSize], protocol.DefaultLimits().MaxFrameSize)
	require.NoError(c.t, err)
	h.Length += uint32(declared)
	frame := protocol.AppendHeader(nil, h)
	frame = append(frame, empty[protocol.HeaderSize:]...)
	c.write(append(frame, make([]byte, sent)...))
	return make([]byte, declared-sent)
}

// Large frames still arriving are charged to the server's MaxFrameMemory:
// two connections holding a 4 MiB frame each spend an 8 MiB budget, a
// third large frame ends its connection with ResourceExhausted, small
// requests on other connections go on (they stay in the read-ahead), and
// when the frames complete and their calls end, the budget is whole again.
func TestLargeFramesInTransitAreBoundedByMaxFrameMemory(t *testing.T) {
	const mib = 1 << 20
	s := startServer(t, server.Options{MaxFrameMemory: 8 * mib})
	a, b, third, small := dialRaw(t, s.addr), dialRaw(t, s.addr), dialRaw(t, s.addr), dialRaw(t, s.addr)

	// 3 MiB of a 4 MiB-byte body each: the buffer has doubled to the
	// whole frame, charged as it grew.
	restA := a.partialRequest(4*mib-64, 3*mib)
	restB := b.partialRequest(4*mib-64, 3*mib)
	// Each frame is charged its whole payload (a few bytes less than
	// 4 MiB): within 1 KiB of the budget, less than the first 16 KiB
	// chunk of another large frame.
	require.Eventually(t, func() bool { return s.Stats().FrameMemory > 8*mib-1<<10 }, 20*time.Second, time.Millisecond,
		"frame memory: %d", s.Stats().FrameMemory)

	third.partialRequest(1*mib, 100<<10)
	e := third.expectClosed()
	require.NotNil(t, e, "a connection Error before the close")
	assert.Equal(t, protocol.CodeResourceExhausted, e.Code)
	assert.Contains(t, e.Message, "MaxFrameMemory")
	assert.EqualValues(t, 1, s.Stats().FrameMemoryRefusals)

	r := small.call("echo", "Say", make([]byte, 1<<10))
	require.Nil(t, r.err, "a small request while the budget is spent")

	// The frames complete; the answers (4 MiB) exceed the raw client's
	// 1 MiB maximum frame size, so each call is answered with an Error,
	// and ends.
	a.write(restA)
	b.write(restB)
	for _, c := range []*rawClient{a, b} {
		r := c.next()
		require.NotNil(t, r.err)
		assert.Equal(t, protocol.CodeResourceExhausted, r.err.Code)
	}
	require.Eventually(t, func() bool { return s.Stats().FrameMemory == 0 }, 20*time.Second, time.Millisecond,
		"frame memory after the calls ended: %d", s.Stats().FrameMemory)
	requireLedgerZero(t, s)
}

// 200 connections each declare a 4 MiB frame and send one byte of it:
// memory follows the bytes received, so the server's heap grows by a few
// KiB per connection, not 4 MiB. (Before: 300 such connections took the
// heap from 3 MB to 1.3 GB.)
func TestDeclaredFramesCostOnlyTheirBytes(t *testing.T) {
	const n = 200
	s := startServer(t, server.Options{
		Connections: server.ConnectionLimits{MaxConnections: 2 * n},
	})
	conns := make([]*rawClient, n)
	for i := range conns {
		conns[i] = dialRaw(t, s.addr)
	}
	base := liveHeap()
	for _, c := range conns {
		c.partialRequest(4<<20-64, 1)
	}
	require.Eventually(t, func() bool { return s.Stats().FrameMemory == n*16<<10 }, 20*time.Second, time.Millisecond,
		"frame memory: %d", s.Stats().FrameMemory)
	grown := liveHeap() - base
	t.Logf("%d connections with a declared 4 MiB frame: heap grew %.1f MiB (%.1f KiB each)", n, float64(grown)/(1<<20), float64(grown)/n/1024)
	assert.Less(t, grown, int64(n*32<<10), "heap per connection holding a declared frame")
}
