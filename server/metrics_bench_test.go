package server_test

import (
	"testing"

	"github.com/sluicerpc/sluice/kernel"
	"github.com/sluicerpc/sluice/limiters/concurrency"
	"github.com/sluicerpc/sluice/server"
	"github.com/sluicerpc/sluice/spi"
)

// BenchmarkServerUnaryMetrics is BenchmarkServerUnary's immediate-permit
// call (Global concurrency) without a MeterProvider and with an SDK one
// (a ManualReader, never collected during the run), side by side: the
// recording of rpc.server.call.duration and the sizes must stay within 5%
// and allocate nothing more.
func BenchmarkServerUnaryMetrics(b *testing.B) {
	for _, withMetrics := range []bool{false, true} {
		name := "no-metrics"
		if withMetrics {
			name = "metrics"
		}
		b.Run(name, func(b *testing.B) {
			var o server.Options
			if withMetrics {
				o.MeterProvider = newMetricsReader(b).mp
			}
			s := startServer(b, o)
			if _, err := s.Admission().Enable(kernel.Options{Global: kernel.Rule{Limits: []spi.Spec{concurrency.Spec(1 << 20)}}}); err != nil {
				b.Fatal(err)
			}
			benchUnaryCalls(b, s)
		})
	}
}
