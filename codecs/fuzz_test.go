package codecs_test

import (
	"context"
	"errors"
	"testing"

	"github.com/sluicerpc/sluice/codecs"
	"github.com/sluicerpc/sluice/spi"
)

// fuzzLimit keeps every fuzzed decode small and fast.
const fuzzLimit = 1 << 20

// fuzzDecompress seeds f with valid bodies of c and bombs in its format,
// then checks that any input decodes to at most fuzzLimit bytes or fails
// with one of the contract's errors, leaving dst unchanged, never panicking.
func fuzzDecompress(f *testing.F, c spi.Codec) {
	for _, n := range []int{0, 1, 100, 5000} {
		for _, sh := range shapes {
			f.Add(compress(f, c, sh.fill(n)))
		}
	}
	for _, n := range []int64{fuzzLimit, fuzzLimit + 1, 16 << 20} {
		if b, err := codecs.Bomb(c.Name(), n); err == nil && len(b) < 1<<20 {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		dst := []byte("dst")
		out, err := c.Decompress(context.Background(), dst, in, fuzzLimit)
		if err != nil {
			if !errors.Is(err, spi.ErrCorrupt) && !errors.Is(err, spi.ErrDecodedTooLarge) {
				t.Fatalf("error wraps neither ErrCorrupt nor ErrDecodedTooLarge: %v", err)
			}
			if string(out) != "dst" {
				t.Fatalf("on error returned %q, want dst unchanged", out)
			}
			return
		}
		if len(out)-len(dst) > fuzzLimit || string(out[:3]) != "dst" {
			t.Fatalf("decoded %d bytes (limit %d), prefix %q", len(out)-len(dst), fuzzLimit, out[:3])
		}
	})
}

func FuzzDecompressIdentity(f *testing.F) { fuzzDecompress(f, codecs.Identity()) }
func FuzzDecompressGzip(f *testing.F)     { fuzzDecompress(f, codecs.Gzip()) }
func FuzzDecompressZstd(f *testing.F)     { fuzzDecompress(f, codecs.Zstd()) }
func FuzzDecompressS2(f *testing.F)       { fuzzDecompress(f, codecs.S2()) }
func FuzzDecompressBrotli(f *testing.F)   { fuzzDecompress(f, codecs.Brotli()) }
