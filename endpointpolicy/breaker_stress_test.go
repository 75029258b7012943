package endpointpolicy_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/endpointpolicy"
	"github.com/sluicerpc/sluice/spi"
)

// TestBreakerStress: many goroutines acquire and report on a few endpoints
// (with duplicates and bogus tokens) while the clock moves and another
// goroutine updates the options. Nothing panics, every state is valid,
// half-open probes never exceed the limit in force, and once everything
// has reported nothing is outstanding.
func TestBreakerStress(t *testing.T) {
	clk := newFakeClock()
	b, err := endpointpolicy.NewCircuitBreaker(endpointpolicy.CircuitBreakerOptions{
		Clock: clk, MinimumThroughput: 5, BreakDuration: 5 * time.Millisecond, SamplingDuration: 50 * time.Millisecond, HalfOpenMaxCalls: 3,
	})
	require.NoError(t, err)
	eps := []string{"a", "b", "c", "d"}
	outcomes := []spi.AttemptOutcome{success, success, sendFailure, remote(14), remote(3), goAway, cancelled}
	const workers, rounds = 32, 3000

	stop := make(chan struct{})
	var bg sync.WaitGroup
	bg.Go(func() {
		opts := []endpointpolicy.CircuitBreakerOptions{
			{MinimumThroughput: 5, FailureRatio: 0.3, BreakDuration: 5 * time.Millisecond, SamplingDuration: 50 * time.Millisecond, HalfOpenMaxCalls: 3},
			{MinimumThroughput: 2, FailureRatio: 0.8, BreakDuration: time.Millisecond, SamplingDuration: 10 * time.Millisecond, HalfOpenMaxCalls: 1},
			{FailureRatio: 7}, // invalid
		}
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			_ = b.Update(opts[i%len(opts)])
			clk.Advance(100 * time.Microsecond)
			for _, s := range b.Snapshot() {
				assert.Contains(t, []endpointpolicy.CircuitState{endpointpolicy.Closed, endpointpolicy.Open, endpointpolicy.HalfOpen}, s.State)
				assert.LessOrEqual(t, s.Probes, 3)
				assert.GreaterOrEqual(t, s.Probes, 0)
			}
		}
	})
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range rounds {
				ep := eps[(w+i)%len(eps)]
				d := b.TryAcquire(ep, "m")
				if !d.Allowed {
					continue
				}
				o := outcomes[(w*7+i)%len(outcomes)]
				b.Report(o, d.Token)
				if i%5 == 0 {
					b.Report(sendFailure, d.Token)
					b.Report(sendFailure, d.Token+1)
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	bg.Wait()
	for _, s := range b.Snapshot() {
		assert.Zero(t, s.Outstanding, s.Endpoint)
		assert.Zero(t, s.Probes, s.Endpoint)
	}
}
