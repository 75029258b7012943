package server_test

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/codecs"
	"github.com/sluicerpc/sluice/kernel"
	"github.com/sluicerpc/sluice/limiters/concurrency"
	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/spi"
)

// countingCodec is a real codec whose decodes are counted: the
// instrument of the acceptance tests ("zero decompressions for a refused
// request").
type countingCodec struct {
	spi.Codec
	decodes, decoded atomic.Int64
}

func counting(c spi.Codec) *countingCodec { return &countingCodec{Codec: c} }

func (c *countingCodec) Decompress(ctx context.Context, dst, src []byte, limit int) ([]byte, error) {
	c.decodes.Add(1)
	out, err := c.Codec.Decompress(ctx, dst, src, limit)
	c.decoded.Add(int64(len(out) - len(dst)))
	return out, err
}

// compress compresses body with c, whatever its size.
func compress(t testing.TB, c spi.Codec, body []byte) []byte {
	t.Helper()
	out, fits, err := c.Compress(make([]byte, 0, len(body)+1024), body)
	require.NoError(t, err)
	require.True(t, fits)
	return out
}

// compressed is a request modifier: the body is compressed by codec id
// and declares orig bytes.
func compressed(id uint8, orig int) func(*protocol.Request) {
	return func(r *protocol.Request) {
		r.Compressed, r.CodecID, r.OriginalLength = true, id, uint32(orig)
	}
}

// compressible is n bytes of text that compresses well.
func compressible(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = "sluice admission "[i%17]
	}
	return b
}

// codecID is the wire id of profile name in the ack.
func (c *rawClient) codecID(name string) uint8 {
	c.t.Helper()
	for i, n := range c.ack.Codecs {
		if n == name {
			return uint8(i + 1)
		}
	}
	c.t.Fatalf("the server accepts no %q (ack: %v)", name, c.ack.Codecs)
	return 0
}

// decodeResponse returns r's body decoded by the built-in codec named in
// the ack, or as it is when uncompressed.
func (c *rawClient) decodeResponse(r result) []byte {
	c.t.Helper()
	if !r.compressed {
		return r.body
	}
	require.NotZero(c.t, r.codecID)
	require.LessOrEqual(c.t, int(r.codecID), len(c.ack.Codecs))
	cd, ok := codecs.ByName(c.ack.Codecs[r.codecID-1])
	require.True(c.t, ok)
	out, err := cd.Decompress(context.Background(), nil, r.body, int(r.origLen))
	require.NoError(c.t, err)
	require.Len(c.t, out, int(r.origLen))
	return out
}

// heapGrowth is the bytes the process allocated while f ran (every
// goroutine's: the server's decode included). It bounds how far the heap
// could grow during f, whatever the collector did meanwhile.
func heapGrowth(f func()) int64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return int64(after.TotalAlloc - before.TotalAlloc)
}

// globalConcurrency admits limit calls at once server-wide and queues up
// to queued more (1 MiB of payload, a minute at most).
func globalConcurrency(limit int64, queued int) *kernel.Options {
	return &kernel.Options{
		Global: kernel.Rule{Limits: []spi.Spec{concurrency.Spec(limit)}},
		Queue:  kernel.QueuePolicy{MaxQueuedCalls: queued, MaxQueuedBytes: 8 << 20, MaxQueueDelay: time.Minute},
	}
}
