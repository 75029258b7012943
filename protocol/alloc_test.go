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
	t.Run("ParseRequest stream", func(t *testing.T) {
		sr := sampleRequest(t)
		sr.Stream, sr.HasMessage, sr.EndStream = true, true, true
		sh, sp := split(t, must(t)(protocol.AppendRequest(nil, 43, sr)))
		var r protocol.Request
		require.NoError(t, protocol.ParseRequest(sh, sp, lim, &r))
		assert.Zero(t, testing.AllocsPerRun(100, func() {
			if err := protocol.ParseRequest(sh, sp, lim, &r); err != nil {
				t.Fatal(err)
			}
		}))
		assert.True(t, r.Stream && r.HasMessage && r.EndStream)
	})
	t.Run("ParseMessage", func(t *testing.T) {
		mf := must(t)(protocol.AppendMessage(nil, 9, &protocol.Message{Metadata: md(t, "a", "b", "c", "d"),
			Compressed: true, CodecID: 1, OriginalLength: 4096, Body: []byte("zz"), EndStream: true}))
		mh, mp := split(t, mf)
		var m protocol.Message
		require.NoError(t, protocol.ParseMessage(mh, mp, lim, &m))
		assert.Zero(t, testing.AllocsPerRun(100, func() {
			if err := protocol.ParseMessage(mh, mp, lim, &m); err != nil {
				t.Fatal(err)
			}
		}))
		assert.Equal(t, 2, m.Metadata.Len())
	})
	t.Run("ParseEnd", func(t *testing.T) {
		eh, ep := split(t, must(t)(protocol.AppendEnd(nil, 9, &protocol.End{Metadata: md(t, "t", "1", "u", "2")})))
		var e protocol.End
		require.NoError(t, protocol.ParseEnd(eh, ep, lim, &e))
		assert.Zero(t, testing.AllocsPerRun(100, func() {
			if err := protocol.ParseEnd(eh, ep, lim, &e); err != nil {
				t.Fatal(err)
			}
		}))
		assert.Equal(t, 2, e.Metadata.Len())
	})
	t.Run("ParseWindowUpdate", func(t *testing.T) {
		wh, wp := split(t, must(t)(protocol.AppendWindowUpdate(nil, 0, &protocol.WindowUpdate{Returned: 16 << 10, Growth: 1 << 20})))
		var w protocol.WindowUpdate
		assert.Zero(t, testing.AllocsPerRun(100, func() {
			if err := protocol.ParseWindowUpdate(wh, wp, &w); err != nil {
				t.Fatal(err)
			}
		}))
		assert.Equal(t, protocol.WindowUpdate{Returned: 16 << 10, Growth: 1 << 20}, w)
	})
	t.Run("AppendStreamFrames", func(t *testing.T) {
		m := &protocol.Message{Metadata: md(t, "a", "b"), Body: bytes.Repeat([]byte("m"), 256), EndStream: true}
		e := &protocol.End{Metadata: md(t, "t", "1")}
		w := &protocol.WindowUpdate{Returned: 1 << 14}
		buf := make([]byte, 0, 1024)
		assert.Zero(t, testing.AllocsPerRun(100, func() {
			var err error
			if buf, err = protocol.AppendMessage(buf[:0], 3, m); err != nil {
				t.Fatal(err)
			}
			if buf, err = protocol.AppendEnd(buf, 3, e); err != nil {
				t.Fatal(err)
			}
			if buf, err = protocol.AppendWindowUpdate(buf, 3, w); err != nil {
				t.Fatal(err)
			}
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
