package protocol_test

import (
	"bytes"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/protocol"
)

// sampleRequest is a typical request with a budget, metadata and a body.
func sampleRequest(t testing.TB) *protocol.Request {
	return &protocol.Request{
		Service: 3, Method: 7, HasBudget: true, Budget: 250 * time.Millisecond, Cancellable: true,
		Metadata: md(t, "trace-id", "4bf92f3577b34da6a3ce929d0e0e4736", "tenant", "acme", "x-retry", "1"),
		Body:     bytes.Repeat([]byte("p"), 256),
	}
}

func TestZeroAllocs(t *testing.T) {
	lim := protocol.DefaultLimits()
	frame := must(t)(protocol.AppendRequest(nil, 42, sampleRequest(t)))
	h, payload := split(t, frame)

	t.Run("ParseHeader", func(t *testing.T) {
		assert.Zero(t, testing.AllocsPerRun(100, func() {
			_, _ = protocol.ParseHeader(frame, lim.MaxFrameSize)
		}))
	})
	t.Run("ParseRequest", func(t *testing.T) {
		var r protocol.Request
		require.NoError(t, protocol.ParseRequest(h, payload, lim, &r))
		assert.Zero(t, testing.AllocsPerRun(100, func() {
			if err := protocol.ParseRequest(h, payload, lim, &r); err != nil {
				t.Fatal(err)
			}
		}))
		v, ok := r.Metadata.Get("tenant")
		assert.True(t, ok)
		assert.Equal(t, "acme", string(v))
	})
	t.Run("ParseResponse", func(t *testing.T) {
		rf := must(t)(protocol.AppendResponse(nil, 1, &protocol.Response{Metadata: md(t, "a", "b"), Body: []byte("x")}))
		rh, rp := split(t, rf)
		var r protocol.Response
		require.NoError(t, protocol.ParseResponse(rh, rp, lim, &r))
		assert.Zero(t, testing.AllocsPerRun(100, func() {
			_ = protocol.ParseResponse(rh, rp, lim, &r)
		}))
	})
	t.Run("AppendRequest", func(t *testing.T) {
		r := sampleRequest(t)
		buf := make([]byte, 0, 1024)
		assert.Zero(t, testing.AllocsPerRun(100, func() {
			var err error
			buf, err = protocol.AppendRequest(buf[:0], 42, r)
			if err != nil {
				t.Fatal(err)
			}
		}))
		assert.Equal(t, frame, buf)
	})
	t.Run("ReadFrame", func(t *testing.T) {
		rd := &loopReader{data: frame}
		r := protocol.NewReader(rd, lim)
		_, _, err := r.ReadFrame()
		require.NoError(t, err)
		assert.Zero(t, testing.AllocsPerRun(100, func() {
			if _, _, err := r.ReadFrame(); err != nil {
				t.Fatal(err)
			}
		}))
	})
}

// loopReader repeats data forever.
type loopReader struct {
	data []byte
	off  int
}

func (l *loopReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		c := copy(p[n:], l.data[l.off:])
		n += c
		l.off = (l.off + c) % len(l.data)
	}
	return n, nil
}

var _ io.Reader = (*loopReader)(nil)
