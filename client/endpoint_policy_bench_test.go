package client_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/sluicerpc/sluice/client"
	"github.com/sluicerpc/sluice/endpointpolicy"
	"github.com/sluicerpc/sluice/server"
	"github.com/sluicerpc/sluice/spi"
)

// countingPolicy allows everything and counts: the cheapest custom policy.
type countingPolicy struct{ next, reported atomic.Uint64 }

func (p *countingPolicy) TryAcquire(string, string) spi.EndpointDecision {
	return spi.EndpointDecision{Allowed: true, Token: p.next.Add(1)}
}
func (p *countingPolicy) Report(spi.AttemptOutcome, uint64) { p.reported.Add(1) }

// BenchmarkAttemptsByPolicy measures calls per second (ns/op) with the
// endpoint policy disabled, with a custom policy and with the circuit
// breaker, side by side against one real server over TCP loopback.
func BenchmarkAttemptsByPolicy(b *testing.B) {
	ts := startServer(b, echoMux(nil), server.Options{})
	req := []byte{1}
	ctx := context.Background()
	for _, mode := range []string{"disabled", "custom", "circuit-breaker"} {
		b.Run(mode, func(b *testing.B) {
			c := dial(b, client.Options{}, ts.addr)
			switch mode {
			case "custom":
				if _, err := c.SetEndpointPolicy(&countingPolicy{}); err != nil {
					b.Fatal(err)
				}
			case "circuit-breaker":
				if _, err := c.EnableCircuitBreaker(endpointpolicy.CircuitBreakerOptions{}); err != nil {
					b.Fatal(err)
				}
			}
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
