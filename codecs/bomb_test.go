package codecs_test

import (
	"bytes"
	stdgzip "compress/gzip"
	"context"
	"errors"
	"io"
	"runtime"
	"testing"

	"github.com/sluicerpc/sluice/codecs"
	"github.com/sluicerpc/sluice/spi"
)

// TestBombsAreRefusedEarlyWithBoundedHeap decodes a 1 GiB bomb in every
// compressing codec's format at a 4 MiB limit: it must be refused as too
// large, after at most the limit's worth of quanta (counted through the
// context checks: a decoder that ran on would check it about 4096 times),
// and allocating no more than the limit plus the decoder's own state.
func TestBombsAreRefusedEarlyWithBoundedHeap(t *testing.T) {
	const (
		decoded = 1 << 30
		limit   = 4 << 20
	)
	// decoder state beyond the output, per codec: zstd's ring is its
	// window (1 MiB for this bomb) plus two blocks; brotli's ring buffer is
	// the stream's window (4 MiB, lgwin 22, for this bomb), and the library
	// allocates it per stream.
	state := map[string]uint64{"zstd": 2 << 20, "s2": 64 << 10, "gzip": 1 << 20, "br": 9 << 20}
	for _, c := range compressing() {
		t.Run(c.Name(), func(t *testing.T) {
			bomb, err := codecs.Bomb(c.Name(), decoded)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("a %d-byte body decoding to %d bytes", len(bomb), decoded)
			for round := range 2 { // cold (pools empty), then warm
				ctx := newCountingCtx(1 << 40)
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				out, err := c.Decompress(ctx, nil, bomb, limit)
				runtime.ReadMemStats(&after)
				if !errors.Is(err, spi.ErrDecodedTooLarge) || len(out) != 0 {
					t.Fatalf("Decompress(bomb) = %d bytes, %v; want ErrDecodedTooLarge", len(out), err)
				}
				alloc := after.TotalAlloc - before.TotalAlloc
				inuse := int64(after.HeapInuse) - int64(before.HeapInuse)
				t.Logf("round %d: %d context checks, %d bytes allocated, heap in use %+d", round, ctx.calls.Load(), alloc, inuse)
				if got, most := ctx.calls.Load(), int64(limit/spi.DecodeQuantum+2); got > most {
					t.Errorf("checked the context %d times: decoded past the limit (at most %d checks expected)", got, most)
				}
				if most := uint64(limit) + state[c.Name()]; alloc > most {
					t.Errorf("allocated %d bytes refusing the bomb, more than limit + state = %d", alloc, most)
				}
			}
		})
	}
}

// TestBombsDecodeToZeros decodes built bombs in full: exactly decoded zero
// bytes, and too large one byte below (the repeated pieces of gzip and br
// bombs, and zstd's hand-built RLE frame, are valid streams).
func TestBombsDecodeToZeros(t *testing.T) {
	for _, c := range compressing() {
		for _, n := range []int{0, 1, 100 << 10, 2<<20 + 1, 5<<20 + 12345} {
			bomb, err := codecs.Bomb(c.Name(), int64(n))
			if err != nil {
				t.Fatal(err)
			}
			out, err := c.Decompress(context.Background(), nil, bomb, n)
			if err != nil || len(out) != n || bytes.ContainsFunc(out, func(r rune) bool { return r != 0 }) {
				t.Fatalf("%s: Bomb(%d) (%d bytes) decodes to %d bytes, %v", c.Name(), n, len(bomb), len(out), err)
			}
			if n > 0 {
				if _, err := c.Decompress(context.Background(), nil, bomb, n-1); !errors.Is(err, spi.ErrDecodedTooLarge) {
					t.Fatalf("%s: Bomb(%d) at limit %d: %v", c.Name(), n, n-1, err)
				}
			}
		}
	}
	// gzip: the standard library's reader agrees (CRC and size included).
	bomb, _ := codecs.Bomb("gzip", 5<<20+12345)
	zr, err := stdgzip.NewReader(bytes.NewReader(bomb))
	if err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(io.Discard, zr)
	if err != nil || n != 5<<20+12345 {
		t.Fatalf("compress/gzip reads %d bytes, %v", n, err)
	}
}
