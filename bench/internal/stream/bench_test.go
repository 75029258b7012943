package stream

import (
	"context"
	"fmt"
	"testing"
)

// BenchmarkStreams moves b.N messages per case through each system
// (bursts of at most burst(size) per call): ns/op, B/op and allocs/op are
// per message, both processes' sides together (client and server run in
// the benchmark's process).
func BenchmarkStreams(b *testing.B) {
	for _, sys := range []System{GRPC(), Sluice()} {
		for _, kind := range []Kind{ServerStreaming, Bidi} {
			for _, size := range []int{64, 1024, 64 << 10} {
				b.Run(fmt.Sprintf("%s/%s/%d", sys.Name, kind, size), func(b *testing.B) {
					s, stop, err := sys.Start()
					if err != nil {
						b.Fatal(err)
					}
					defer stop()
					body := make([]byte, size)
					ctx := context.Background()
					n := burst(size)
					if _, err := s.Fill(ctx, n, size); err != nil { // warm up
						b.Fatal(err)
					}
					b.SetBytes(int64(size))
					b.ReportAllocs()
					b.ResetTimer()
					for left := b.N; left > 0; left -= n {
						k := min(n, left)
						var got int
						if kind == ServerStreaming {
							got, err = s.Fill(ctx, k, size)
						} else {
							got, err = s.Echo(ctx, k, body)
						}
						if err != nil || got != k {
							b.Fatalf("%d of %d: %v", got, k, err)
						}
					}
				})
			}
		}
	}
}
