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
