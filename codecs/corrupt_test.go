package codecs_test

import (
	"context"
	"errors"
	"testing"

	"github.com/sluicerpc/sluice/spi"
)

// bodies is a few valid bodies of c: empty, short, and several quanta.
func bodies(t *testing.T, c spi.Codec) [][]byte {
	var out [][]byte
	for _, n := range []int{0, 1, 100, 5000, 600 << 10} {
		_, enc := body(t, c, 2, n)
		out = append(out, enc)
	}
	return out
}

func TestTruncatedBodiesAreCorrupt(t *testing.T) {
	for _, c := range all()[1:] { // identity has no format to truncate
		t.Run(c.Name(), func(t *testing.T) {
			for _, body := range bodies(t, c) {
				cuts := []int{0, 1, len(body) / 2, len(body) - 1}
				if len(body) < 300 {
					cuts = cuts[:0]
					for i := range len(body) {
						cuts = append(cuts, i)
					}
				}
				for _, n := range cuts {
					out, err := c.Decompress(context.Background(), nil, body[:n], 1<<30)
					if !errors.Is(err, spi.ErrCorrupt) || len(out) != 0 {
						t.Fatalf("Decompress(first %d of %d bytes) = %d bytes, %v; want ErrCorrupt", n, len(body), len(out), err)
					}
				}
			}
		})
	}
}

func TestTrailingBytesAreCorrupt(t *testing.T) {
	for _, c := range all()[1:] { // identity: trailing bytes are part of the body
		t.Run(c.Name(), func(t *testing.T) {
			for _, body := range bodies(t, c) {
				for _, tail := range [][]byte{{0}, {0xff}, []byte("garbage after"), make([]byte, 64<<10), body} {
					in := append(append([]byte(nil), body...), tail...)
					out, err := c.Decompress(context.Background(), []byte("x"), in, 1<<30)
					if !errors.Is(err, spi.ErrCorrupt) || string(out) != "x" {
						t.Fatalf("Decompress(%d-byte body + %d trailing bytes) = %d bytes, %v; want ErrCorrupt and dst unchanged", len(body), len(tail), len(out), err)
					}
				}
			}
		})
	}
}

// TestCorruptBodiesFailOrStayBounded flips bytes across valid bodies: the
// checksummed formats (gzip, zstd) must report an error or decode the
// original bytes (a flip in a header flag may be harmless); every codec must
// return an error or at most the limit, never panic.
func TestCorruptBodiesFailOrStayBounded(t *testing.T) {
	checksummed := map[string]bool{"gzip": true, "zstd": true}
	for _, c := range all()[1:] {
		t.Run(c.Name(), func(t *testing.T) {
			for k, body := range bodies(t, c)[1:4] { // 1, 100 and 5000 bytes
				orig := string(shapes[2].fill([]int{1, 100, 5000}[k]))
				for i := 0; i < len(body); i += max(1, len(body)/200) {
					for _, x := range []byte{0x01, 0x80, 0xff} {
						in := append([]byte(nil), body...)
						in[i] ^= x
						const limit = 1 << 20
						out, err := c.Decompress(context.Background(), nil, in, limit)
						switch {
						case err == nil && len(out) > limit:
							t.Fatalf("flip %#x at %d: %d bytes, above the limit", x, i, len(out))
						case err == nil && checksummed[c.Name()] && string(out) != orig:
							t.Fatalf("flip %#x at %d of %d: decoded other bytes without error", x, i, len(body))
						case err != nil && !errors.Is(err, spi.ErrCorrupt) && !errors.Is(err, spi.ErrDecodedTooLarge):
							t.Fatalf("flip %#x at %d: %v, want ErrCorrupt or ErrDecodedTooLarge", x, i, err)
						}
					}
				}
			}
		})
	}
}
