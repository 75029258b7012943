//go:build !race

// The race detector makes sync.Pool drop items at random: allocation
// counts are only meaningful without it.

package codecs_test

import (
	"context"
	"testing"
)

// TestSteadyStateCompressAllocatesNothing: with warm pools, Compress of a
// 64 KiB message allocates nothing, whether it fits or not (the compression
// policy hits "would not fit" for every incompressible message).
func TestSteadyStateCompressAllocatesNothing(t *testing.T) {
	src, _ := body(t, all()[0], 2, 64<<10)
	for _, c := range all() {
		_, enc := body(t, c, 2, 64<<10)
		fit := make([]byte, 0, len(enc)+64)
		short := make([]byte, 0, len(enc)-1)
		for name, dst := range map[string][]byte{"fits": fit, "does not fit": short} {
			if c.Name() == "identity" && name == "does not fit" {
				continue
			}
			c.Compress(dst, src)
			if n := testing.AllocsPerRun(20, func() { c.Compress(dst, src) }); n > 0 {
				t.Errorf("%s: Compress (%s) allocates %.1f times per call", c.Name(), name, n)
			}
		}
	}
}

// TestSteadyStateDecompressAllocates: with warm pools and a dst with room,
// Decompress of a 64 KiB body allocates nothing for identity, s2, gzip and
// zstd, and at most the brotli library's own few allocations.
func TestSteadyStateDecompressAllocates(t *testing.T) {
	most := map[string]float64{"br": 5}
	for _, c := range all() {
		_, enc := body(t, c, 2, 64<<10)
		dst := make([]byte, 0, 64<<10)
		c.Decompress(context.Background(), dst, enc, 64<<10)
		n := testing.AllocsPerRun(20, func() {
			if _, err := c.Decompress(context.Background(), dst, enc, 64<<10); err != nil {
				t.Fatal(err)
			}
		})
		if n > most[c.Name()] {
			t.Errorf("%s: Decompress allocates %.1f times per call, want at most %v", c.Name(), n, most[c.Name()])
		}
	}
}
