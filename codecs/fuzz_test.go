package codecs_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"

	"github.com/klauspost/compress/s2"
	"github.com/sluicerpc/sluice/codecs"
	"github.com/sluicerpc/sluice/spi"
)

// fuzzLimit keeps every fuzzed decode small and fast.
const fuzzLimit = 1 << 20

// fuzzDecompress seeds f with valid bodies of c (one of several quanta of
// zeros among them) and bombs in its format, then checks that any input
// decodes to at most fuzzLimit bytes or fails with one of the contract's
// errors, leaving dst unchanged, never panicking. agree, when not nil,
// checks an accepted input against another decoder.
func fuzzDecompress(f *testing.F, c spi.Codec, agree func(t *testing.T, in, out []byte)) {
	for _, n := range []int{0, 1, 100, 5000} {
		for _, sh := range shapes {
			f.Add(compress(f, c, sh.fill(n)))
		}
	}
	f.Add(compress(f, c, make([]byte, 2*spi.DecodeQuantum+7)))
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
		if agree != nil {
			agree(t, in, out[3:])
		}
	})
}

// s2ReaderAgrees: a body S2 accepts is an S2 stream that s2.Reader reads
// to the same bytes.
func s2ReaderAgrees(t *testing.T, in, out []byte) {
	got, err := io.ReadAll(s2.NewReader(bytes.NewReader(in)))
	if err != nil || !bytes.Equal(got, out) {
		t.Fatalf("S2 accepted a body of %d decoded bytes that s2.Reader reads as %d bytes, %v", len(out), len(got), err)
	}
}

func FuzzDecompressIdentity(f *testing.F) { fuzzDecompress(f, codecs.Identity(), nil) }
func FuzzDecompressGzip(f *testing.F)     { fuzzDecompress(f, codecs.Gzip(), nil) }
func FuzzDecompressZstd(f *testing.F)     { fuzzDecompress(f, codecs.Zstd(), nil) }
func FuzzDecompressS2(f *testing.F)       { fuzzDecompress(f, codecs.S2(), s2ReaderAgrees) }
func FuzzDecompressBrotli(f *testing.F)   { fuzzDecompress(f, codecs.Brotli(), nil) }
