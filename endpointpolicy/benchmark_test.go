package endpointpolicy_test

import (
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/sluicerpc/sluice/endpointpolicy"
	"github.com/sluicerpc/sluice/spi"
)

// benchPolicies builds each policy on the monotonic clock, configured so
// that the steady path (TryAcquire allowed, Report success) is measured.
func benchPolicies(b *testing.B) map[string]spi.EndpointPolicy {
	clk := spi.NewMonotonicClock()
	br, err := endpointpolicy.NewCircuitBreaker(endpointpolicy.CircuitBreakerOptions{Clock: clk})
	if err != nil {
		b.Fatal(err)
	}
	th, err := endpointpolicy.NewAdaptiveThrottle(endpointpolicy.AdaptiveThrottleOptions{Clock: clk})
	if err != nil {
		b.Fatal(err)
	}
	c, err := endpointpolicy.NewEndpointConcurrency(1 << 16)
	if err != nil {
		b.Fatal(err)
	}
	return map[string]spi.EndpointPolicy{"breaker": br, "throttle": th, "concurrency": c}
}

var benchOrder = []string{"breaker", "throttle", "concurrency"}

func BenchmarkTryAcquireReport(b *testing.B) {
	for _, name := range benchOrder {
		b.Run(name+"/serial", func(b *testing.B) {
			p := benchPolicies(b)[name]
			p.Report(success, p.TryAcquire("10.0.0.1:443", "m").Token) // warm up
			b.ReportAllocs()
			for b.Loop() {
				d := p.TryAcquire("10.0.0.1:443", "m")
				p.Report(success, d.Token)
			}
		})
		b.Run(name+"/parallel-one-endpoint", func(b *testing.B) {
			p := benchPolicies(b)[name]
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					d := p.TryAcquire("10.0.0.1:443", "m")
					p.Report(success, d.Token)
				}
			})
		})
		b.Run(name+"/parallel-8-endpoints", func(b *testing.B) {
			p := benchPolicies(b)[name]
			eps := make([]string, 8)
			for i := range eps {
				eps[i] = "10.0.0." + strconv.Itoa(i) + ":443"
				p.Report(success, p.TryAcquire(eps[i], "m").Token)
			}
			var next atomic.Int64
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				ep := eps[next.Add(1)%int64(len(eps))]
				for pb.Next() {
					d := p.TryAcquire(ep, "m")
					p.Report(success, d.Token)
				}
			})
		})
	}
}
