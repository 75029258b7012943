package protocol_test

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/protocol"
)

// stream returns three frames back to back and their expected headers and
// payloads.
func stream(t testing.TB) ([]byte, []protocol.Header, [][]byte) {
	var s []byte
	s = protocol.AppendPing(s, [8]byte{1, 2, 3, 4, 5, 6, 7, 8})
	s = must(t)(protocol.AppendRequest(s, 1, &protocol.Request{Service: 1, Method: 2, Body: bytes.Repeat([]byte("x"), 10000)}))
	s = must(t)(protocol.AppendResponse(s, 1, &protocol.Response{}))
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

func TestReaderFrames(t *testing.T) {
	s, hs, ps := stream(t)
	for _, tt := range []struct {
		name string
		r    io.Reader
	}{
		{"whole", bytes.NewReader(s)},
		{"one byte reads", iotest.OneByteReader(bytes.NewReader(s))},
		{"half reads", iotest.HalfReader(bytes.NewReader(s))},
		{"data with EOF", iotest.DataErrReader(bytes.NewReader(s))},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := protocol.NewReaderSize(tt.r, 16, protocol.DefaultLimits())
			for i := range hs {
				h, p, err := r.ReadFrame()
				require.NoError(t, err)
				assert.Equal(t, hs[i], h)
				assert.Equal(t, ps[i], p)
			}
			_, _, err := r.ReadFrame()
			assert.Equal(t, io.EOF, err)
			_, _, err = r.ReadFrame()
			assert.Equal(t, io.EOF, err, "errors are sticky")
		})
	}
}

func TestReaderUnexpectedEOF(t *testing.T) {
	s, _, _ := stream(t)
	// 24 is the end of the first frame, a boundary.
	for _, cut := range []int{1, 15, 16, 20, 23, 25, 100, len(s) - 1} {
		r := protocol.NewReader(iotest.OneByteReader(bytes.NewReader(s[:cut])), protocol.DefaultLimits())
		var err error
		for err == nil {
			_, _, err = r.ReadFrame()
		}
		assert.ErrorIs(t, err, io.ErrUnexpectedEOF, "cut at %d", cut)
	}
	r := protocol.NewReader(bytes.NewReader(nil), protocol.DefaultLimits())
	_, _, err := r.ReadFrame()
	assert.Equal(t, io.EOF, err)
}

func TestReaderUnderlyingError(t *testing.T) {
	boom := errors.New("boom")
	r := protocol.NewReader(iotest.ErrReader(boom), protocol.DefaultLimits())
	_, _, err := r.ReadFrame()
	assert.ErrorIs(t, err, boom)
}

// countingReader counts the bytes read from it.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

func TestReaderRejectsOversizedBeforePayload(t *testing.T) {
	lim := protocol.DefaultLimits()
	lim.MaxFrameSize = protocol.MinFrameSize
	frame := must(t)(protocol.AppendResponse(nil, 1, &protocol.Response{Body: make([]byte, 1<<20)}))
	cr := &countingReader{r: iotest.OneByteReader(bytes.NewReader(frame))}
	r := protocol.NewReaderSize(cr, 16, lim)
	_, _, err := r.ReadFrame()
	require.True(t, protocol.IsViolation(err))
	assert.Contains(t, err.Error(), "exceeds max frame size 4096")
	assert.Equal(t, protocol.HeaderSize, cr.n, "only the header was read")
	_, _, err2 := r.ReadFrame()
	assert.Equal(t, err, err2, "violations are sticky")
}

func TestReaderSetMaxFrameSize(t *testing.T) {
	lim := protocol.DefaultLimits()
	var s []byte
	s = must(t)(protocol.AppendResponse(s, 1, &protocol.Response{Body: make([]byte, 5000)}))
	s = must(t)(protocol.AppendResponse(s, 2, &protocol.Response{Body: make([]byte, 5000)}))
	r := protocol.NewReader(bytes.NewReader(s), lim)
	_, p, err := r.ReadFrame()
	require.NoError(t, err)
	assert.Len(t, p, 5000)
	r.SetMaxFrameSize(4096)
	_, _, err = r.ReadFrame()
	assert.True(t, protocol.IsViolation(err))
}

func TestReaderBadHeader(t *testing.T) {
	frame := protocol.AppendPing(nil, [8]byte{})
	frame[0] = 0
	r := protocol.NewReader(bytes.NewReader(frame), protocol.DefaultLimits())
	_, _, err := r.ReadFrame()
	assert.True(t, protocol.IsViolation(err))
}

func TestReaderPayloadReused(t *testing.T) {
	var s []byte
	s = must(t)(protocol.AppendResponse(s, 1, &protocol.Response{Body: []byte("first")}))
	s = must(t)(protocol.AppendResponse(s, 2, &protocol.Response{Body: []byte("other")}))
	r := protocol.NewReader(bytes.NewReader(s), protocol.DefaultLimits())
	_, p1, err := r.ReadFrame()
	require.NoError(t, err)
	assert.Equal(t, "first", string(p1))
	_, p2, err := r.ReadFrame()
	require.NoError(t, err)
	assert.Equal(t, "other", string(p2))
	assert.Equal(t, len(p2), cap(p2), "the payload cannot be appended into the buffer")
}
