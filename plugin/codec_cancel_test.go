package plugin_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/plugin/internal/testcodec"
	"github.com/sluicerpc/sluice/spi"
)

// errCountingCtx is cancelled as its cancelAt-th Err call returns: only
// the host's own checks (Err) move it, not watchers of Done, so it ends
// after the plugin has finished decoding, where only the host can see it.
type errCountingCtx struct {
	context.Context
	cancelAt int

	mu   sync.Mutex
	n    int
	done chan struct{}
}

func newErrCountingCtx(cancelAt int) *errCountingCtx {
	return &errCountingCtx{Context: context.Background(), cancelAt: cancelAt, done: make(chan struct{})}
}

func (c *errCountingCtx) Done() <-chan struct{} { return c.done }

func (c *errCountingCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n++; c.n == c.cancelAt {
		close(c.done)
	}
	if c.n >= c.cancelAt {
		return context.Canceled
	}
	return nil
}

// TestCodecDecompressChecksTheHostContextBetweenPieces: a context that ends
// after the plugin has decoded everything still stops the host within one
// quantum: the decoded bytes cross in pieces of a quantum, written into
// dst one by one, with a check of the host's context after each. Here it
// ends at the third check (before the call, after the first piece, after
// the second): exactly two pieces were written.
func TestCodecDecompressChecksTheHostContextBetweenPieces(t *testing.T) {
	p := openCodecs(t)
	c := codec(t, p, testcodec.DeflateName)
	const decoded = 8 << 20
	bomb, err := testcodec.DeflateBomb(decoded)
	require.NoError(t, err)
	dst := make([]byte, 0, decoded)
	for i := range cap(dst) {
		dst[:cap(dst)][i] = 0xA5
	}
	ctx := newErrCountingCtx(3)
	out, err := c.Decompress(ctx, dst, bomb, decoded)
	require.ErrorIs(t, err, context.Canceled)
	assert.Empty(t, out)
	written := 0
	for written < cap(dst) && dst[:cap(dst)][written] == 0 {
		written++
	}
	assert.Equal(t, 2*spi.DecodeQuantum, written, "bytes written into dst before the host saw its context end")

	// Uncancelled, the same body decodes whole.
	out, err = c.Decompress(context.Background(), nil, bomb, decoded)
	require.NoError(t, err)
	assert.Len(t, out, decoded)
	assert.Zero(t, p.Failures())
}
