package codecs_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/sluicerpc/sluice/codecs"
	"github.com/sluicerpc/sluice/spi"
)

// all is every built-in codec, identity included.
func all() []spi.Codec { return append([]spi.Codec{codecs.Identity()}, compressing()...) }

// compressing is every compressing built-in, in Builtin's order.
func compressing() []spi.Codec {
	return []spi.Codec{codecs.Zstd(), codecs.S2(), codecs.Gzip(), codecs.Brotli()}
}

var sizes = []int{0, 1, 100, 1 << 10, 64 << 10, 1 << 20, 4 << 20}

// shape fills n bytes of one kind.
type shape struct {
	name string
	fill func(n int) []byte
}

var shapes = []shape{
	{"zeros", func(n int) []byte { return make([]byte, n) }},
	{"random", func(n int) []byte {
		b := make([]byte, n)
		r := rand.New(rand.NewPCG(uint64(n), 7))
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		return b
	}},
	{"json", func(n int) []byte {
		b := make([]byte, 0, n+64)
		for i := 0; len(b) < n; i++ {
			b = fmt.Appendf(b, `{"id":%d,"name":"user-%d","tags":["a","b%d"],"ok":%t},`, i, i*7, i%13, i%3 == 0)
		}
		return b[:n]
	}},
}

// compress returns the compressed form of src with room to spare.
func compress(t testing.TB, c spi.Codec, src []byte) []byte {
	t.Helper()
	out, fits, err := c.Compress(make([]byte, 0, 2*len(src)+1024), src)
	if err != nil || !fits {
		t.Fatalf("%s: Compress(%d bytes) = fits %v, %v", c.Name(), len(src), fits, err)
	}
	return out
}

// countingCtx is a context whose Err is nil for its first after calls and
// context.Canceled from then on; it counts every call.
type countingCtx struct {
	context.Context
	after int64
	calls atomic.Int64
}

func newCountingCtx(after int64) *countingCtx {
	return &countingCtx{Context: context.Background(), after: after}
}

func (c *countingCtx) Err() error {
	if c.calls.Add(1) > c.after {
		return context.Canceled
	}
	return nil
}

// encoded caches compressed test bodies: the large ones are slow to build
// under the race detector, and several tests decode the same ones.
var encoded sync.Map // encodedKey -> []byte

type encodedKey struct {
	codec string
	shape int
	n     int
}

// body returns shapes[shape].fill(n) and its compressed form in c, cached.
func body(t testing.TB, c spi.Codec, shape, n int) (src, enc []byte) {
	t.Helper()
	src = shapes[shape].fill(n)
	key := encodedKey{c.Name(), shape, n}
	if b, ok := encoded.Load(key); ok {
		return src, b.([]byte)
	}
	enc = compress(t, c, src)
	encoded.Store(key, enc)
	return src, enc
}
