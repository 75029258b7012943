package protocol_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sluicerpc/sluice/protocol"
)

// A Writer whose peer does not drain: WriteContext waits for space only
// until its context ends, then returns the context's cause with the frame
// not queued; TryWrite never waits (ErrWouldBlock); a frame that fits is
// queued by both. What was queued goes out once the peer drains, nothing
// of the frames refused (issue 36 section 1: the client's waits are
// bounded by the caller's context, its reader never blocks on a write).
func TestWriterWaitsBoundedByContextAndTryWriteNever(t *testing.T) {
	defer goleak.VerifyNone(t)
	synctest.Test(t, func(t *testing.T) {
		cw := &countingWriter{gate: make(chan struct{})}
		w := protocol.NewWriter(cw, 32)
		frame := protocol.AppendPing(nil, [8]byte{1})
		require.NoError(t, w.Write(frame)) // taken by the gated flusher
		synctest.Wait()
		require.NoError(t, w.TryWrite(frame), "nothing pending: queued") // pending: 24 bytes

		other := protocol.AppendPing(nil, [8]byte{2})
		require.ErrorIs(t, w.TryWrite(other), protocol.ErrWouldBlock)

		ctx, cancel := context.WithTimeoutCause(context.Background(), time.Second, errors.New("the call's deadline"))
		defer cancel()
		began := time.Now()
		err := w.WriteContext(ctx, other)
		assert.EqualError(t, err, "the call's deadline")
		assert.Equal(t, time.Second, time.Since(began), "waited exactly until the deadline")

		cancelled, cancelNow := context.WithCancel(context.Background())
		cancelNow()
		require.ErrorIs(t, w.WriteContext(cancelled, other), context.Canceled)

		close(cw.gate) // the peer drains
		synctest.Wait()
		require.NoError(t, w.WriteContext(ctx, frame), "fits now; an expired context does not refuse a frame that fits")
		require.NoError(t, w.Close())
		_, out := cw.stats()
		assert.Equal(t, bytes.Repeat(frame, 3), out, "the queued frames, none of the refused")
	})
}
