package protocol_test

import (
	"bytes"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sluicerpc/sluice/protocol"
)

// countingWriter records every Write call. If gate is non-nil, the first
// Write blocks until gate is closed.
type countingWriter struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	calls int
	gate  chan struct{}
	err   error
}

func (c *countingWriter) Write(p []byte) (int, error) {
	c.mu.Lock()
	first := c.calls == 0
	c.mu.Unlock()
	if first && c.gate != nil {
		<-c.gate
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls++
	if c.err != nil {
		return 0, c.err
	}
	return c.buf.Write(p)
}

func (c *countingWriter) stats() (int, []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls, bytes.Clone(c.buf.Bytes())
}

func TestWriterCoalesces(t *testing.T) {
	defer goleak.VerifyNone(t)
	const writers, perWriter = 16, 50
	cw := &countingWriter{gate: make(chan struct{})}
	w := protocol.NewWriter(cw, 1<<20)

	// The first frame is taken by the flusher, which then blocks in the
	// gated Write; everything written meanwhile must go out in one batch.
	first := protocol.AppendPing(nil, [8]byte{})
	require.NoError(t, w.Write(first))
	var wg sync.WaitGroup
	for g := range writers {
		wg.Go(func() {
			for i := range perWriter {
				frame, err := protocol.AppendResponse(nil, uint64(g*perWriter+i+1), &protocol.Response{Body: []byte{byte(g), byte(i)}})
				assert.NoError(t, err)
				assert.NoError(t, w.Write(frame))
			}
		})
	}
	wg.Wait()
	close(cw.gate)
	require.NoError(t, w.Close())

	calls, out := cw.stats()
	frames := 1 + writers*perWriter
	t.Logf("%d frames in %d underlying writes", frames, calls)
	assert.Less(t, calls, frames)
	assert.LessOrEqual(t, calls, 2)

	// Every frame arrives intact; each writer's frames stay in order.
	r := protocol.NewReader(bytes.NewReader(out), protocol.DefaultLimits())
	next := make([]int, writers)
	n := 0
	for {
		h, p, err := r.ReadFrame()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		n++
		if h.Type == protocol.FrameResponse {
			g, i := int(p[0]), int(p[1])
			assert.Equal(t, next[g], i)
			next[g]++
		}
	}
	assert.Equal(t, frames, n)
}

func TestWriterConcurrentUngated(t *testing.T) {
	defer goleak.VerifyNone(t)
	cw := &countingWriter{}
	w := protocol.NewWriter(cw, 256) // small bound: writers block and resume
	frame := protocol.AppendPing(nil, [8]byte{9})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 200 {
				assert.NoError(t, w.Write(frame))
			}
		})
	}
	wg.Wait()
	require.NoError(t, w.Close())
	calls, out := cw.stats()
	assert.Equal(t, bytes.Repeat(frame, 1600), out)
	t.Logf("1600 frames in %d writes", calls)
}

func TestWriterLargeFrame(t *testing.T) {
	defer goleak.VerifyNone(t)
	cw := &countingWriter{}
	w := protocol.NewWriter(cw, 64)
	big := must(t)(protocol.AppendResponse(nil, 1, &protocol.Response{Body: make([]byte, 1000)}))
	require.NoError(t, w.Write(big))
	require.NoError(t, w.Write(big))
	require.NoError(t, w.Close())
	_, out := cw.stats()
	assert.Equal(t, append(bytes.Clone(big), big...), out)
}

func TestWriterError(t *testing.T) {
	defer goleak.VerifyNone(t)
	synctest.Test(t, func(t *testing.T) {
		boom := errors.New("boom")
		cw := &countingWriter{err: boom}
		w := protocol.NewWriter(cw, 0)
		frame := protocol.AppendPing(nil, [8]byte{})
		require.NoError(t, w.Write(frame)) // queued; the error surfaces later
		// The flusher writes the frame, fails and returns: from then on
		// every Write and Close returns the error.
		synctest.Wait()
		calls, _ := cw.stats()
		require.Equal(t, 1, calls, "the flusher has written the batch")
		assert.ErrorIs(t, w.Write(frame), boom)
		assert.ErrorIs(t, w.Write(frame), boom)
		assert.ErrorIs(t, w.Close(), boom)
		assert.ErrorIs(t, w.Close(), boom)
	})
}

type shortWriter struct{}

func (shortWriter) Write(p []byte) (int, error) { return len(p) / 2, nil }

func TestWriterShortWrite(t *testing.T) {
	defer goleak.VerifyNone(t)
	w := protocol.NewWriter(shortWriter{}, 0)
	require.NoError(t, w.Write(protocol.AppendPing(nil, [8]byte{})))
	assert.ErrorIs(t, w.Close(), io.ErrShortWrite)
}

func TestWriterClose(t *testing.T) {
	defer goleak.VerifyNone(t)
	cw := &countingWriter{}
	w := protocol.NewWriter(cw, 0)
	frame := protocol.AppendPing(nil, [8]byte{1})
	for range 10 {
		require.NoError(t, w.Write(frame))
	}
	require.NoError(t, w.Close())
	_, out := cw.stats()
	assert.Equal(t, bytes.Repeat(frame, 10), out, "Close flushes pending frames")
	assert.ErrorIs(t, w.Write(frame), protocol.ErrWriterClosed)
	assert.NoError(t, w.Close(), "Close is idempotent")
}

func TestWriterCloseUnblocksWriters(t *testing.T) {
	defer goleak.VerifyNone(t)
	synctest.Test(t, func(t *testing.T) {
		cw := &countingWriter{gate: make(chan struct{})}
		w := protocol.NewWriter(cw, 32)
		frame := protocol.AppendPing(nil, [8]byte{})
		require.NoError(t, w.Write(frame)) // taken by the gated flusher
		synctest.Wait()                    // the flusher holds it in the gated Write
		require.NoError(t, w.Write(frame)) // pending: 24 bytes
		var returned atomic.Int32
		var wg sync.WaitGroup
		var errs [4]error
		for i := range errs {
			wg.Go(func() {
				errs[i] = w.Write(frame) // 24+24 > 32: blocks
				returned.Add(1)
			})
		}
		synctest.Wait()
		require.Zero(t, returned.Load(), "the writers block on the full buffer")
		done := make(chan error)
		go func() { done <- w.Close() }()
		synctest.Wait() // Close has released the writers and waits for the flusher
		require.Equal(t, int32(len(errs)), returned.Load(), "Close unblocks the writers")
		for _, err := range errs {
			assert.ErrorIs(t, err, protocol.ErrWriterClosed)
		}
		close(cw.gate)
		require.NoError(t, <-done)
		wg.Wait()
		_, out := cw.stats()
		assert.Equal(t, bytes.Repeat(frame, 2), out, "Close flushes what was pending, nothing of the writers it unblocked")
	})
}

// WriteFinal: frames queued before it go out before it, nothing after it,
// and a writer blocked on a full buffer is released with ErrWriterClosed.
func TestWriterWriteFinal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out bytes.Buffer
		gate := make(chan struct{})
		w := protocol.NewWriter(writerFunc(func(p []byte) (int, error) {
			<-gate
			return out.Write(p)
		}), 3)
		require.NoError(t, w.Write([]byte("ab")))
		synctest.Wait() // the flusher holds "ab", blocked in the gated write
		require.NoError(t, w.Write([]byte("cd")))
		blocked := make(chan error, 1)
		go func() { blocked <- w.Write([]byte("ef")) }() // pending full: waits
		synctest.Wait()
		require.NoError(t, w.WriteFinal([]byte("XY")))
		require.ErrorIs(t, <-blocked, protocol.ErrWriterClosed)
		require.ErrorIs(t, w.Write([]byte("gh")), protocol.ErrWriterClosed)
		require.ErrorIs(t, w.WriteFinal([]byte("ZZ")), protocol.ErrWriterClosed)
		close(gate)
		require.NoError(t, w.Close())
		require.Equal(t, "abcdXY", out.String())
	})
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
