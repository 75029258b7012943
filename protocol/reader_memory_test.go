package protocol_test

import (
	"bytes"
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/protocol"
)

// A header declaring the largest frame, followed by a few bytes and
// silence (here the end of the stream): the reader holds memory for the
// bytes that came, not for the 4 MiB declared.
func TestReaderMemoryFollowsBytesReceived(t *testing.T) {
	lim := protocol.DefaultLimits()
	for _, sent := range []int{0, 100, 20 << 10, 100 << 10} {
		frame := protocol.AppendHeader(nil, protocol.Header{Type: protocol.FrameRequest, ID: 1, Length: lim.MaxFrameSize})
		frame = append(frame, make([]byte, sent)...)
		r := protocol.NewReader(bytes.NewReader(frame), lim)
		_, _, err := r.ReadFrame()
		require.ErrorIs(t, err, io.ErrUnexpectedEOF)
		require.LessOrEqual(t, protocol.ReaderBufferCap(r), max(16<<10, 2*sent),
			"%d bytes of a declared %d held %d bytes", sent, lim.MaxFrameSize, protocol.ReaderBufferCap(r))
	}
}

// The largest frame still arrives whole, in pieces of any size, and the
// buffer is reused for the next one.
func TestReaderGrowsToALargeFrameAsItArrives(t *testing.T) {
	lim := protocol.DefaultLimits()
	payload := make([]byte, lim.MaxFrameSize)
	for i := range payload {
		payload[i] = byte(i * 7)
	}
	var stream []byte
	for range 2 {
		stream = protocol.AppendHeader(stream, protocol.Header{Type: protocol.FrameRequest, ID: 1, Length: uint32(len(payload))})
		stream = append(stream, payload...)
	}
	r := protocol.NewReader(io.MultiReader(oneByteAtFirst(stream)...), lim)
	for range 2 {
		_, p, err := r.ReadFrame()
		require.NoError(t, err)
		require.True(t, bytes.Equal(payload, p))
	}
	require.Equal(t, int(lim.MaxFrameSize), protocol.ReaderBufferCap(r))
}

// oneByteAtFirst splits b into readers: a run of one-byte pieces, then
// the rest in 100 KiB pieces.
func oneByteAtFirst(b []byte) []io.Reader {
	var rs []io.Reader
	for i := 0; i < 64 && len(b) > 0; i++ {
		rs = append(rs, bytes.NewReader(b[:1]))
		b = b[1:]
	}
	for len(b) > 0 {
		n := min(len(b), 100<<10)
		rs = append(rs, bytes.NewReader(b[:n]))
		b = b[n:]
	}
	return rs
}

func TestMaxHandshakeSize(t *testing.T) {
	lim := protocol.DefaultLimits()
	require.EqualValues(t, 17598, protocol.MaxHandshakeSize(lim))
	lim.MaxFrameSize = protocol.MinFrameSize
	require.EqualValues(t, protocol.MinFrameSize, protocol.MaxHandshakeSize(lim), "never above the frame size")
}

// Close gives back the budget charge of the last large frame, which only
// the next ReadFrame released before: an owner that refuses a frame and
// stops reading kept its charge for good. Later reads fail.
func TestReaderCloseGivesBackTheLastFramesCharge(t *testing.T) {
	lim := protocol.DefaultLimits()
	frame, err := protocol.AppendRequest(nil, 1, &protocol.Request{Body: make([]byte, 256<<10)})
	require.NoError(t, err)
	b := protocol.NewFrameBudget(1 << 20)
	r := protocol.NewReader(bytes.NewReader(append(frame, frame...)), lim)
	r.SetBudget(b)
	_, _, err = r.ReadFrame()
	require.NoError(t, err)
	require.Positive(t, b.InUse(), "the large frame is charged")
	r.Close()
	require.Zero(t, b.InUse())
	_, _, err = r.ReadFrame()
	require.ErrorIs(t, err, protocol.ErrReaderClosed)
	r.Close()
	require.Zero(t, b.InUse())

	// A charge the caller took stays the caller's.
	r = protocol.NewReader(bytes.NewReader(frame), lim)
	r.SetBudget(b)
	_, _, err = r.ReadFrame()
	require.NoError(t, err)
	taken := r.TakeCharge()
	r.Close()
	require.Equal(t, taken, b.InUse())
	b.Release(taken)
}
