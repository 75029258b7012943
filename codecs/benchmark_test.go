package codecs_test

import (
	"context"
	"fmt"
	"testing"
)

// BenchmarkCompress and BenchmarkDecompress report the steady-state cost of
// one call into a reused destination (go test -bench . -benchmem).
func BenchmarkCompress(b *testing.B) {
	for _, c := range all() {
		for _, n := range []int{1 << 10, 64 << 10, 1 << 20} {
			src := shapes[2].fill(n)
			b.Run(fmt.Sprintf("%s/%d", c.Name(), n), func(b *testing.B) {
				dst := make([]byte, 0, 2*n+1024)
				b.SetBytes(int64(n))
				b.ReportAllocs()
				for b.Loop() {
					if _, fits, err := c.Compress(dst, src); !fits || err != nil {
						b.Fatal(fits, err)
					}
				}
			})
		}
	}
}

func BenchmarkDecompress(b *testing.B) {
	for _, c := range all() {
		for _, n := range []int{1 << 10, 64 << 10, 1 << 20} {
			src := shapes[2].fill(n)
			enc := compress(b, c, src)
			for _, reuse := range []bool{true, false} {
				b.Run(fmt.Sprintf("%s/%d/reuse=%v", c.Name(), n, reuse), func(b *testing.B) {
					dst := make([]byte, 0, n)
					b.SetBytes(int64(n))
					b.ReportAllocs()
					for b.Loop() {
						d := dst
						if !reuse {
							d = nil
						}
						if _, err := c.Decompress(context.Background(), d, enc, n); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		}
	}
}
