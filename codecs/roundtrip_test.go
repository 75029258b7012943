package codecs_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/sluicerpc/sluice/spi"
)

func TestRoundTripsOverSizesAndShapes(t *testing.T) {
	for _, c := range all() {
		for k, sh := range shapes {
			for _, n := range sizes {
				t.Run(fmt.Sprintf("%s/%s/%d", c.Name(), sh.name, n), func(t *testing.T) {
					src, enc := body(t, c, k, n)
					prefix := []byte("keep")
					got, err := c.Decompress(context.Background(), prefix, enc, n)
					if err != nil {
						t.Fatalf("Decompress at limit %d: %v", n, err)
					}
					if !bytes.Equal(got[:4], prefix) || !bytes.Equal(got[4:], src) {
						t.Fatalf("Decompress returned %d bytes, not keep+%d", len(got), n)
					}
					if n == 0 {
						return
					}
					got, err = c.Decompress(context.Background(), prefix, enc, n-1)
					if !errors.Is(err, spi.ErrDecodedTooLarge) {
						t.Fatalf("Decompress at limit %d of %d bytes: %v, want ErrDecodedTooLarge", n-1, n, err)
					}
					if !bytes.Equal(got, prefix) {
						t.Fatalf("on error Decompress returned %q, want dst unchanged", got)
					}
				})
			}
		}
	}
}

func TestNamesAreValidWireProfiles(t *testing.T) {
	want := []string{"identity", "zstd", "s2", "gzip", "br"}
	for i, c := range all() {
		if c.Name() != want[i] || !spi.ValidCodecName(c.Name()) {
			t.Errorf("codec %d is named %q, want %q (valid)", i, c.Name(), want[i])
		}
	}
}

func TestCompressReportsWouldNotFit(t *testing.T) {
	src := shapes[2].fill(64 << 10)
	for _, c := range all() {
		t.Run(c.Name(), func(t *testing.T) {
			enc := compress(t, c, src)
			exact := append(make([]byte, 0, 3+len(enc)), "abc"...)
			out, fits, err := c.Compress(exact, src)
			if err != nil || !fits || !bytes.Equal(out[3:], enc) || &out[0] != &exact[:1][0] {
				t.Fatalf("Compress into exactly enough room: fits %v, %v, same backing %v", fits, err, len(out) > 0 && &out[0] == &exact[:1][0])
			}
			short := append(make([]byte, 0, 3+len(enc)-1), "abc"...)
			out, fits, err = c.Compress(short, src)
			if err != nil || fits || len(out) != 3 || cap(out) != cap(short) || &out[0] != &short[0] {
				t.Fatalf("Compress into one byte too few: fits %v, %v, len %d cap %d (want 3, %d, unchanged)", fits, err, len(out), cap(out), cap(short))
			}
		})
	}
}

// TestNegativeLimitAllowsNothing: the contract asks for a limit of at least
// 0; a negative one is treated as 0, never as a huge unsigned bound.
func TestNegativeLimitAllowsNothing(t *testing.T) {
	for _, c := range all() {
		_, one := body(t, c, 2, 100)
		if _, err := c.Decompress(context.Background(), nil, one, -1); !errors.Is(err, spi.ErrDecodedTooLarge) {
			t.Errorf("%s: 100 bytes at limit -1: %v, want ErrDecodedTooLarge", c.Name(), err)
		}
		_, empty := body(t, c, 2, 0)
		if out, err := c.Decompress(context.Background(), nil, empty, -1); err != nil || len(out) != 0 {
			t.Errorf("%s: an empty body at limit -1: %d bytes, %v", c.Name(), len(out), err)
		}
	}
}
