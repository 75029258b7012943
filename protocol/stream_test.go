package protocol_test

import (
	"bytes"
	"io"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/protocol"
)

func TestMessageRoundTrip(t *testing.T) {
	lim := protocol.DefaultLimits()
	tests := []struct {
		name  string
		id    uint64
		msg   protocol.Message
		flags protocol.Flags
	}{
		{"empty", 1, protocol.Message{}, 0},
		{"body", math.MaxUint64, protocol.Message{Body: bytes.Repeat([]byte("ab"), 1000)}, 0},
		{"last", 2, protocol.Message{Body: []byte("bye"), EndStream: true}, protocol.FlagEndStream},
		{"empty last", 2, protocol.Message{EndStream: true}, protocol.FlagEndStream},
		{"headers", 3, protocol.Message{Metadata: md(t, "x", "y", "x", "z"), Body: []byte("b")}, protocol.FlagHasMetadata},
		{"headers only", 3, protocol.Message{Metadata: md(t, "x", "")}, protocol.FlagHasMetadata},
		{"max entries", 4, protocol.Message{Metadata: maxEntries(t)}, protocol.FlagHasMetadata},
		{"compressed", 5, protocol.Message{Compressed: true, CodecID: 3, OriginalLength: 70000, Body: []byte{9, 8}}, protocol.FlagCompressed},
		{"compressed max decoded", 5, protocol.Message{Compressed: true, CodecID: 255, OriginalLength: lim.MaxDecodedSize, Body: []byte{1}}, protocol.FlagCompressed},
		{"everything", 6, protocol.Message{Metadata: md(t, "k", "v"), Compressed: true, CodecID: 1, OriginalLength: 5, Body: []byte{1}, EndStream: true},
			protocol.FlagHasMetadata | protocol.FlagCompressed | protocol.FlagEndStream},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			frame, err := protocol.AppendMessage([]byte("prefix"), tt.id, &tt.msg)
			require.NoError(t, err)
			require.Equal(t, "prefix", string(frame[:6]))
			h, payload := split(t, frame[6:])
			assert.Equal(t, protocol.FrameMessage, h.Type)
			assert.Equal(t, tt.id, h.ID)
			assert.Equal(t, tt.flags, h.Flags)
			var got protocol.Message
			require.NoError(t, protocol.ParseMessage(h, payload, lim, &got))
			assert.Equal(t, viewMessage(&tt.msg), viewMessage(&got))
			if len(tt.msg.Body) == 0 {
				assert.Nil(t, got.Body)
			}
		})
	}
}

// TestMessageLayout pins the bytes of a Message: metadata block, then the
// body in the compressed form shared with Request and Response.
func TestMessageLayout(t *testing.T) {
	m := protocol.Message{Metadata: md(t, "k", "v"), Compressed: true, CodecID: 2, OriginalLength: 300, Body: []byte{0xAA}}
	frame := must(t)(protocol.AppendMessage(nil, 7, &m))
	want := raw(protocol.FrameMessage, protocol.FlagHasMetadata|protocol.FlagCompressed, 7,
		mdBlock("k", "v"), b(2), uv(300), b(0xAA))
	assert.Equal(t, want, frame)
}

func TestEndRoundTrip(t *testing.T) {
	lim := protocol.DefaultLimits()
	big := maxEntries(t)
	for _, tt := range []struct {
		name string
		id   uint64
		end  protocol.End
		size uint32
	}{
		{"half-close", 1, protocol.End{}, 0},
		{"trailers", math.MaxUint64, protocol.End{Metadata: md(t, "status-detail", "\x00\xff", "a", "")}, 21},
		{"max entries", 2, protocol.End{Metadata: maxEntries(t)}, uint32(big.EncodedLen())},
	} {
		t.Run(tt.name, func(t *testing.T) {
			frame := must(t)(protocol.AppendEnd(nil, tt.id, &tt.end))
			h, payload := split(t, frame)
			assert.Equal(t, protocol.FrameEnd, h.Type)
			assert.Equal(t, tt.id, h.ID)
			assert.Equal(t, tt.size, h.Length)
			assert.Equal(t, tt.end.Metadata.Len() > 0, h.Flags.Has(protocol.FlagHasMetadata))
			var got protocol.End
			require.NoError(t, protocol.ParseEnd(h, payload, lim, &got))
			assert.Equal(t, entries(&tt.end.Metadata), entries(&got.Metadata))
		})
	}
}

// TestEndEmptyMetadataBlock: a server's End may carry an empty block with
// HasMetadata (encoders omit it, decoders accept it).
func TestEndEmptyMetadataBlock(t *testing.T) {
	h, p := split(t, raw(protocol.FrameEnd, protocol.FlagHasMetadata, 3, uv(0)))
	var e protocol.End
	require.NoError(t, protocol.ParseEnd(h, p, protocol.DefaultLimits(), &e))
	assert.Equal(t, 0, e.Metadata.Len())
}

func TestWindowUpdateRoundTrip(t *testing.T) {
	for _, tt := range []struct {
		name string
		id   uint64
		w    protocol.WindowUpdate
		size uint32
	}{
		{"return one byte, connection", 0, protocol.WindowUpdate{Returned: 1}, 2},
		{"grow only", 9, protocol.WindowUpdate{Growth: protocol.InitialStreamWindow}, 4},
		{"quarter of a stream window", math.MaxUint64, protocol.WindowUpdate{Returned: protocol.InitialStreamWindow / 4}, 4},
		{"both at max", 1, protocol.WindowUpdate{Returned: protocol.MaxWindow, Growth: protocol.MaxWindow}, 10},
	} {
		t.Run(tt.name, func(t *testing.T) {
			frame := must(t)(protocol.AppendWindowUpdate(nil, tt.id, &tt.w))
			h, payload := split(t, frame)
			assert.Equal(t, protocol.FrameWindowUpdate, h.Type)
			assert.Equal(t, tt.id, h.ID)
			assert.Equal(t, protocol.Flags(0), h.Flags)
			assert.Equal(t, tt.size, h.Length)
			var got protocol.WindowUpdate
			require.NoError(t, protocol.ParseWindowUpdate(h, payload, &got))
			assert.Equal(t, tt.w, got)
		})
	}
}

// TestWindowReturnSplitsWhatOneFrameCannotCarry: AppendWindowReturn hands
// back any amount a receive window can owe (up to 2·MaxWindow−1, and
// beyond) in frames that each parse, whose sums are exactly what was
// asked; nothing for nothing.
func TestWindowReturnSplitsWhatOneFrameCannotCarry(t *testing.T) {
	const mw = uint64(protocol.MaxWindow)
	for _, tt := range []struct {
		returned, growth uint64
		frames           int
	}{
		{0, 0, 0},
		{1, 0, 1},
		{0, 7, 1},
		{mw, mw, 1},
		{mw + 1, 0, 2},
		{2*mw - 1, 5, 2},
		{2 * mw, 0, 2},
		{1<<32 - 1, 0, 3},
		{3, 2*mw + 1, 3},
	} {
		dst := protocol.AppendWindowReturn(nil, 7, tt.returned, tt.growth)
		var returned, growth uint64
		frames := 0
		r := protocol.NewReader(bytes.NewReader(dst), protocol.DefaultLimits())
		for {
			h, payload, err := r.ReadFrame()
			if err == io.EOF {
				break
			}
			require.NoError(t, err)
			require.Equal(t, protocol.FrameWindowUpdate, h.Type)
			require.Equal(t, uint64(7), h.ID)
			var w protocol.WindowUpdate
			require.NoError(t, protocol.ParseWindowUpdate(h, payload, &w))
			returned += uint64(w.Returned)
			growth += uint64(w.Growth)
			frames++
		}
		assert.Equal(t, tt.returned, returned, "returned of %+v", tt)
		assert.Equal(t, tt.growth, growth, "growth of %+v", tt)
		assert.Equal(t, tt.frames, frames, "frames of %+v", tt)
	}
	assert.Equal(t, uint64(protocol.MaxWindow), uint64(protocol.MaxMessageCharge))
}

// TestWindowUpdateNonMinimal: decoders accept non-minimal uvarints within
// 10 bytes, as everywhere in the protocol.
func TestWindowUpdateNonMinimal(t *testing.T) {
	h, p := split(t, raw(protocol.FrameWindowUpdate, 0, 0, b(0x81, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00), b(0x80, 0x00)))
	var w protocol.WindowUpdate
	require.NoError(t, protocol.ParseWindowUpdate(h, p, &w))
	assert.Equal(t, protocol.WindowUpdate{Returned: 1}, w)
}

func TestWindowConstants(t *testing.T) {
	assert.Equal(t, 65536, protocol.InitialStreamWindow)
	assert.Equal(t, 1048576, protocol.InitialConnWindow)
	assert.Equal(t, uint32(math.MaxInt32), uint32(protocol.MaxWindow))
}

// streamFrames returns a bidirectional stream's frames back to back (both
// directions, as a test of the parsers) and their headers and payloads.
func streamFrames(t testing.TB) ([]byte, []protocol.Header, [][]byte) {
	var s []byte
	s = must(t)(protocol.AppendRequest(s, 5, &protocol.Request{Service: 1, Method: 2, Stream: true, HasMessage: true, Body: []byte("first")}))
	s = must(t)(protocol.AppendWindowUpdate(s, 5, &protocol.WindowUpdate{Growth: 1 << 20}))
	s = must(t)(protocol.AppendMessage(s, 5, &protocol.Message{Metadata: md(t, "h", "1"), Body: bytes.Repeat([]byte("r"), 5000)}))
	s = must(t)(protocol.AppendMessage(s, 5, &protocol.Message{Body: []byte("second"), Compressed: true, CodecID: 1, OriginalLength: 100}))
	s = must(t)(protocol.AppendWindowUpdate(s, 0, &protocol.WindowUpdate{Returned: 5000}))
	s = must(t)(protocol.AppendEnd(s, 5, &protocol.End{}))
	s = must(t)(protocol.AppendEnd(s, 5, &protocol.End{Metadata: md(t, "t", "2")}))
	var hs []protocol.Header
	var ps [][]byte
	for rest := s; len(rest) > 0; {
		h, err := protocol.ParseHeader(rest, 1<<30)
		require.NoError(t, err)
		hs = append(hs, h)
		ps = append(ps, rest[protocol.HeaderSize:protocol.HeaderSize+int(h.Length)])
		rest = rest[protocol.HeaderSize+int(h.Length):]
	}
	return s, hs, ps
}

// TestStreamFramesThroughReader: the Reader accepts the stream frame
// types, returns them intact, and each decodes.
func TestStreamFramesThroughReader(t *testing.T) {
	s, hs, ps := streamFrames(t)
	want := []protocol.FrameType{protocol.FrameRequest, protocol.FrameWindowUpdate, protocol.FrameMessage, protocol.FrameMessage,
		protocol.FrameWindowUpdate, protocol.FrameEnd, protocol.FrameEnd}
	lim := protocol.DefaultLimits()
	r := protocol.NewReaderSize(bytes.NewReader(s), 16, lim)
	for i := range hs {
		h, p, err := r.ReadFrame()
		require.NoError(t, err, "frame %d", i)
		assert.Equal(t, want[i], h.Type)
		assert.Equal(t, hs[i], h)
		assert.Equal(t, ps[i], p)
		assert.NoError(t, decode(append(protocol.AppendHeader(nil, h), p...), lim))
	}
	_, _, err := r.ReadFrame()
	assert.Equal(t, io.EOF, err)
}
