package server_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/server"
)

// TestStreamWindowGrowsOnAdmission: a stream's receive window grows to
// Options.StreamWindow when its handler starts, not before: a queued
// stream may be sent its initial 64 KiB only (no growth while it waits),
// and once admitted, a WindowUpdate grows it by the difference, which the
// client may then fill without a violation.
func TestStreamWindowGrowsOnAdmission(t *testing.T) {
	const window = 256 << 10
	grow := uint32(window - protocol.InitialStreamWindow)
	s, c, holder, queued := queuedStream(t, server.Options{Admission: oneSlowAtATime(1 << 20), StreamWindow: window})
	h := s.mux.st
	f := c.nextStream()
	require.Equal(t, protocol.FrameWindowUpdate, f.typ, "%+v", f)
	assert.Equal(t, holder, f.id)
	assert.Equal(t, protocol.WindowUpdate{Growth: grow}, f.wu, "the running stream's window grows")

	// The queued stream: "first" and one message fill its initial window
	// exactly; nothing grows it while it waits.
	c.msg(queued, make([]byte, protocol.InitialStreamWindow-int(cost(len("first")))), false)
	require.Empty(t, c.pingPong(), "no growth before admission")

	c.cancel(holder)
	assert.ErrorIs(t, <-h.recvErr, context.Canceled)
	<-h.entered // the queued stream runs
	// The holder's Error and the queued stream's growth, in either order:
	// the holder gives back its permit before its Error is written.
	var grown, holderEnded bool
	for !grown || !holderEnded {
		f := c.nextStream()
		switch {
		case f.typ == protocol.FrameWindowUpdate && f.id == queued:
			require.False(t, grown, "a second growth")
			assert.Equal(t, protocol.WindowUpdate{Growth: grow}, f.wu)
			grown = true
		case f.typ == protocol.FrameError && f.id == holder:
			holderEnded = true
		default:
			require.True(t, f.typ == protocol.FrameWindowUpdate && f.id == 0, "unexpected %+v", f)
		}
	}
	// The growth is credit: the client fills it, and the server stays.
	c.msg(queued, make([]byte, grow), false)
	require.Empty(t, c.pingPong())
	assert.Zero(t, s.Stats().ProtocolViolations)
	c.cancel(queued)
	requireLedgerZero(t, s)
}

// TestStreamWindowOption: Options.StreamWindow below the initial window or
// above MaxWindow is refused by New, with the bound in the error.
func TestStreamWindowOption(t *testing.T) {
	mux := func() *server.Mux {
		m := server.NewMux()
		m.HandleRaw("echo", "Say", func(_ context.Context, req []byte) ([]byte, error) { return req, nil })
		return m
	}
	for _, w := range []int{-1, protocol.InitialStreamWindow - 1, protocol.MaxWindow + 1} {
		_, err := server.New(mux(), server.Options{StreamWindow: w})
		require.Error(t, err, "StreamWindow %d", w)
		assert.Contains(t, err.Error(), "StreamWindow")
	}
	for _, w := range []int{0, protocol.InitialStreamWindow, protocol.MaxWindow} {
		_, err := server.New(mux(), server.Options{StreamWindow: w})
		require.NoError(t, err, "StreamWindow %d", w)
	}
}
