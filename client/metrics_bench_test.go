package client_test

import (
	"context"
	"testing"

	"github.com/sluicerpc/sluice/client"
	"github.com/sluicerpc/sluice/server"
)

// BenchmarkCallRawMetrics is BenchmarkCallRaw's serial and parallel calls
// without a MeterProvider and with an SDK one (a ManualReader, never
// collected during the run), side by side: the recording of
// rpc.client.call.duration, the sizes and the attempts must allocate
// nothing more and cost little against a loopback round trip.
func BenchmarkCallRawMetrics(b *testing.B) {
	ts := startServer(b, echoMux(nil), server.Options{})
	req := []byte{1}
	ctx := context.Background()
	for _, withMetrics := range []bool{false, true} {
		name := "no-metrics"
		var o client.Options
		if withMetrics {
			name = "metrics"
			o.MeterProvider = newMetricsReader(b).mp
		}
		c := dial(b, o, ts.addr)
		b.Run(name+"/serial", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.CallRaw(ctx, "echo/Echo", req); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/parallel", func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := c.CallRaw(ctx, "echo/Echo", req); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
