package endpointpolicy_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/endpointpolicy"
	"github.com/sluicerpc/sluice/spi"
)

// newBreaker returns a breaker on a fake clock; o.Clock is overwritten.
func newBreaker(t *testing.T, o endpointpolicy.CircuitBreakerOptions) (*endpointpolicy.CircuitBreaker, *fakeClock) {
	t.Helper()
	clk := newFakeClock()
	o.Clock = clk
	b, err := endpointpolicy.NewCircuitBreaker(o)
	require.NoError(t, err)
	return b, clk
}

// attempt sends one allowed attempt on ep and reports o.
func attempt(t *testing.T, p spi.EndpointPolicy, ep string, o spi.AttemptOutcome) {
	t.Helper()
	d := p.TryAcquire(ep, "m")
	require.True(t, d.Allowed, "attempt on %s refused", ep)
	p.Report(o, d.Token)
}

func attempts(t *testing.T, p spi.EndpointPolicy, ep string, o spi.AttemptOutcome, n int) {
	t.Helper()
	for range n {
		attempt(t, p, ep, o)
	}
}

func snapshotOf(t *testing.T, b *endpointpolicy.CircuitBreaker, ep string) endpointpolicy.CircuitSnapshot {
	t.Helper()
	for _, s := range b.Snapshot() {
		if s.Endpoint == ep {
			return s
		}
	}
	t.Fatalf("no snapshot for %s", ep)
	return endpointpolicy.CircuitSnapshot{}
}

func TestBreakerStaysClosedBelowMinimumThroughput(t *testing.T) {
	b, _ := newBreaker(t, endpointpolicy.CircuitBreakerOptions{MinimumThroughput: 5})
	attempts(t, b, "a", sendFailure, 4)
	assert.Equal(t, endpointpolicy.Closed, b.State("a"), "4 failures out of 4 is below the minimum throughput")
	attempt(t, b, "a", sendFailure)
	assert.Equal(t, endpointpolicy.Open, b.State("a"))
}

func TestBreakerOpensAtRatio(t *testing.T) {
	cases := []struct {
		name                string
		ratio               float64
		successes, failures int
		want                endpointpolicy.CircuitState
	}{
		{"below ratio", 0.5, 6, 4, endpointpolicy.Closed},
		{"at ratio", 0.5, 5, 5, endpointpolicy.Open},
		{"above ratio", 0.5, 3, 7, endpointpolicy.Open},
		{"ratio 1 needs all failures", 1, 1, 9, endpointpolicy.Closed},
		{"ratio 1 all failures", 1, 0, 10, endpointpolicy.Open},
		{"low ratio", 0.1, 9, 1, endpointpolicy.Open},
		{"low ratio no failure", 0.1, 10, 0, endpointpolicy.Closed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, _ := newBreaker(t, endpointpolicy.CircuitBreakerOptions{MinimumThroughput: 10, FailureRatio: tc.ratio})
			attempts(t, b, "a", success, tc.successes)
			attempts(t, b, "a", sendFailure, tc.failures)
			assert.Equal(t, tc.want, b.State("a"))
		})
	}
}

func TestBreakerOpenRefusesWithRetryAfter(t *testing.T) {
	b, clk := newBreaker(t, endpointpolicy.CircuitBreakerOptions{MinimumThroughput: 2, BreakDuration: 10 * time.Second})
	attempts(t, b, "a", sendFailure, 2)
	require.Equal(t, endpointpolicy.Open, b.State("a"))

	d := b.TryAcquire("a", "m")
	assert.Equal(t, spi.EndpointDecision{RetryAfter: 10 * time.Second}, d)
	clk.Advance(3 * time.Second)
	d = b.TryAcquire("a", "m")
	assert.Equal(t, spi.EndpointDecision{RetryAfter: 7 * time.Second}, d)
	assert.Equal(t, 7*time.Second, snapshotOf(t, b, "a").RetryAfter)
	clk.Advance(7*time.Second - 1)
	assert.Equal(t, time.Duration(1), b.TryAcquire("a", "m").RetryAfter)
	assert.Equal(t, endpointpolicy.Open, b.State("a"), "State does not move the circuit")

	clk.Advance(1)
	d = b.TryAcquire("a", "m")
	assert.True(t, d.Allowed, "after BreakDuration the next attempt is a probe")
	assert.Equal(t, endpointpolicy.HalfOpen, b.State("a"))
	b.Report(success, d.Token)
	assert.Equal(t, endpointpolicy.Closed, b.State("a"))
}

func TestBreakerHalfOpen(t *testing.T) {
	open := func(t *testing.T) (*endpointpolicy.CircuitBreaker, *fakeClock) {
		b, clk := newBreaker(t, endpointpolicy.CircuitBreakerOptions{MinimumThroughput: 1, BreakDuration: time.Second, HalfOpenMaxCalls: 2})
		attempt(t, b, "a", sendFailure)
		require.Equal(t, endpointpolicy.Open, b.State("a"))
		clk.Advance(time.Second)
		return b, clk
	}
	probes := func(t *testing.T, b *endpointpolicy.CircuitBreaker) (p1, p2 spi.EndpointDecision) {
		p1, p2 = b.TryAcquire("a", "m"), b.TryAcquire("a", "m")
		require.True(t, p1.Allowed)
		require.True(t, p2.Allowed)
		assert.Equal(t, spi.EndpointDecision{}, b.TryAcquire("a", "m"), "a third probe is refused, with no date")
		s := snapshotOf(t, b, "a")
		assert.Equal(t, endpointpolicy.HalfOpen, s.State)
		assert.Equal(t, 2, s.Probes)
		return p1, p2
	}

	t.Run("success closes with a fresh window", func(t *testing.T) {
		b, _ := open(t)
		p1, p2 := probes(t, b)
		b.Report(success, p1.Token)
		assert.Equal(t, endpointpolicy.Closed, b.State("a"))
		b.Report(sendFailure, p2.Token) // from the half-open period: ignored
		s := snapshotOf(t, b, "a")
		assert.Equal(t, endpointpolicy.Closed, s.State)
		assert.Zero(t, s.Successes+s.Failures, "the closed circuit starts with a fresh window")
		assert.Zero(t, s.Outstanding)
		attempt(t, b, "a", success)
		assert.Equal(t, uint64(1), snapshotOf(t, b, "a").Successes)
	})
	t.Run("failure reopens for a new break", func(t *testing.T) {
		b, clk := open(t)
		p1, p2 := probes(t, b)
		clk.Advance(500 * time.Millisecond)
		b.Report(spi.AttemptOutcome{Kind: spi.OutcomeConnectionClosed}, p1.Token)
		assert.Equal(t, endpointpolicy.Open, b.State("a"))
		assert.Equal(t, time.Second, b.TryAcquire("a", "m").RetryAfter, "measured from the reopening")
		b.Report(success, p2.Token) // stale: does not close the reopened circuit
		assert.Equal(t, endpointpolicy.Open, b.State("a"))
	})
	t.Run("an unsampled probe frees its place", func(t *testing.T) {
		b, _ := open(t)
		p1, _ := probes(t, b)
		b.Report(cancelled, p1.Token)
		assert.Equal(t, endpointpolicy.HalfOpen, b.State("a"))
		p3 := b.TryAcquire("a", "m")
		assert.True(t, p3.Allowed)
		b.Report(goAway, p3.Token)
		assert.Equal(t, endpointpolicy.HalfOpen, b.State("a"))
		assert.Equal(t, 1, snapshotOf(t, b, "a").Probes)
	})
}

func TestBreakerWindowForgetsOldBuckets(t *testing.T) {
	o := endpointpolicy.CircuitBreakerOptions{MinimumThroughput: 4, SamplingDuration: 10 * time.Second}
	t.Run("inside the window", func(t *testing.T) {
		b, clk := newBreaker(t, o)
		attempts(t, b, "a", sendFailure, 3)
		clk.Advance(9*time.Second + 999*time.Millisecond)
		s := snapshotOf(t, b, "a")
		assert.Equal(t, uint64(3), s.Failures)
		attempt(t, b, "a", sendFailure)
		assert.Equal(t, endpointpolicy.Open, b.State("a"))
	})
	t.Run("slid out", func(t *testing.T) {
		b, clk := newBreaker(t, o)
		attempts(t, b, "a", sendFailure, 3)
		clk.Advance(10 * time.Second)
		attempt(t, b, "a", sendFailure)
		s := snapshotOf(t, b, "a")
		assert.Equal(t, endpointpolicy.Closed, s.State)
		assert.Equal(t, uint64(1), s.Failures)
	})
	t.Run("bucket by bucket", func(t *testing.T) {
		b, clk := newBreaker(t, o)
		for range 5 {
			attempt(t, b, "a", success)
			clk.Advance(3 * time.Second)
		}
		// Samples at 0, 3, 6, 9, 12 s; at 15 s the window (buckets
		// 6..15 s) holds those at 6, 9 and 12 s.
		assert.Equal(t, uint64(3), snapshotOf(t, b, "a").Successes)
		clk.Advance(time.Hour)
		assert.Zero(t, snapshotOf(t, b, "a").Successes)
	})
	t.Run("a late attempt counts in the current bucket", func(t *testing.T) {
		b, clk := newBreaker(t, o)
		d := b.TryAcquire("a", "m")
		clk.Advance(time.Minute)
		attempts(t, b, "a", sendFailure, 3)
		b.Report(sendFailure, d.Token)
		assert.Equal(t, endpointpolicy.Open, b.State("a"))
	})
}

func TestBreakerEndpointsAreIndependent(t *testing.T) {
	b, _ := newBreaker(t, endpointpolicy.CircuitBreakerOptions{MinimumThroughput: 2})
	attempts(t, b, "a", sendFailure, 2)
	attempts(t, b, "b", success, 2)
	attempt(t, b, "c", sendFailure)
	assert.Equal(t, endpointpolicy.Open, b.State("a"))
	assert.Equal(t, endpointpolicy.Closed, b.State("b"))
	assert.Equal(t, endpointpolicy.Closed, b.State("c"))
	assert.Equal(t, endpointpolicy.Closed, b.State("never seen"))
	assert.True(t, b.TryAcquire("b", "m").Allowed)
	snap := b.Snapshot()
	require.Len(t, snap, 3)
	assert.Equal(t, []string{"a", "b", "c"}, []string{snap[0].Endpoint, snap[1].Endpoint, snap[2].Endpoint})
	assert.Equal(t, 1, snap[1].Outstanding)
}

func TestBreakerUpdateKeepsState(t *testing.T) {
	t.Run("open stays open; break measured from the opening", func(t *testing.T) {
		b, clk := newBreaker(t, endpointpolicy.CircuitBreakerOptions{MinimumThroughput: 1, BreakDuration: 10 * time.Second})
		attempt(t, b, "a", sendFailure)
		clk.Advance(3 * time.Second)
		require.NoError(t, b.Update(endpointpolicy.CircuitBreakerOptions{MinimumThroughput: 1, BreakDuration: 5 * time.Second}))
		assert.Equal(t, endpointpolicy.Open, b.State("a"))
		assert.Equal(t, 2*time.Second, b.TryAcquire("a", "m").RetryAfter)
		require.NoError(t, b.Update(endpointpolicy.CircuitBreakerOptions{MinimumThroughput: 1, BreakDuration: 20 * time.Second}))
		assert.Equal(t, 17*time.Second, b.TryAcquire("a", "m").RetryAfter)
		require.NoError(t, b.Update(endpointpolicy.CircuitBreakerOptions{MinimumThroughput: 1, BreakDuration: 2 * time.Second}))
		assert.True(t, b.TryAcquire("a", "m").Allowed, "the shorter break is already over")
		assert.Equal(t, endpointpolicy.HalfOpen, b.State("a"))
	})
	t.Run("history kept; a lower ratio opens at the next outcome", func(t *testing.T) {
		b, _ := newBreaker(t, endpointpolicy.CircuitBreakerOptions{MinimumThroughput: 10, FailureRatio: 0.5})
		attempts(t, b, "a", success, 6)
		attempts(t, b, "a", sendFailure, 4)
		require.Equal(t, endpointpolicy.Closed, b.State("a"))
		require.NoError(t, b.Update(endpointpolicy.CircuitBreakerOptions{MinimumThroughput: 10, FailureRatio: 0.3}))
		s := snapshotOf(t, b, "a")
		assert.Equal(t, endpointpolicy.Closed, s.State, "Update itself decides nothing")
		assert.Equal(t, [2]uint64{6, 4}, [2]uint64{s.Successes, s.Failures})
		attempt(t, b, "a", success) // 4/11 >= 0.3
		assert.Equal(t, endpointpolicy.Open, b.State("a"))
	})
	t.Run("a lower minimum throughput", func(t *testing.T) {
		b, _ := newBreaker(t, endpointpolicy.CircuitBreakerOptions{MinimumThroughput: 100})
		attempts(t, b, "a", sendFailure, 5)
		require.NoError(t, b.Update(endpointpolicy.CircuitBreakerOptions{MinimumThroughput: 6}))
		attempt(t, b, "a", success)
		assert.Equal(t, endpointpolicy.Open, b.State("a"))
	})
	t.Run("fewer half-open calls", func(t *testing.T) {
		b, clk := newBreaker(t, endpointpolicy.CircuitBreakerOptions{MinimumThroughput: 1, HalfOpenMaxCalls: 3, BreakDuration: time.Second})
		attempt(t, b, "a", sendFailure)
		clk.Advance(time.Second)
		p1, p2 := b.TryAcquire("a", "m"), b.TryAcquire("a", "m")
		require.True(t, p1.Allowed && p2.Allowed)
		require.NoError(t, b.Update(endpointpolicy.CircuitBreakerOptions{MinimumThroughput: 1, HalfOpenMaxCalls: 1, BreakDuration: time.Second}))
		assert.False(t, b.TryAcquire("a", "m").Allowed)
		b.Report(cancelled, p1.Token)
		assert.False(t, b.TryAcquire("a", "m").Allowed, "one probe is still in flight")
		b.Report(cancelled, p2.Token)
		assert.True(t, b.TryAcquire("a", "m").Allowed)
	})
	t.Run("outstanding tokens survive an update", func(t *testing.T) {
		b, _ := newBreaker(t, endpointpolicy.CircuitBreakerOptions{MinimumThroughput: 1})
		d := b.TryAcquire("a", "m")
		require.NoError(t, b.Update(endpointpolicy.CircuitBreakerOptions{MinimumThroughput: 1}))
		b.Report(sendFailure, d.Token)
		assert.Equal(t, endpointpolicy.Open, b.State("a"))
	})
	t.Run("nil clock keeps the clock", func(t *testing.T) {
		b, clk := newBreaker(t, endpointpolicy.CircuitBreakerOptions{})
		require.NoError(t, b.Update(endpointpolicy.CircuitBreakerOptions{FailureRatio: 0.9}))
		assert.Same(t, clk, b.Options().Clock)
		assert.Equal(t, 0.9, b.Options().FailureRatio)
		assert.Equal(t, 20, b.Options().MinimumThroughput, "zero fields take their defaults")
	})
}

func TestBreakerInvalidUpdateChangesNothing(t *testing.T) {
	b, _ := newBreaker(t, endpointpolicy.CircuitBreakerOptions{MinimumThroughput: 3, FailureRatio: 0.6})
	attempts(t, b, "a", sendFailure, 2)
	before := b.Options()
	err := b.Update(endpointpolicy.CircuitBreakerOptions{MinimumThroughput: 1, FailureRatio: 2})
	require.ErrorIs(t, err, endpointpolicy.ErrInvalidOptions)
	assert.Contains(t, err.Error(), "FailureRatio")
	after := b.Options()
	assert.Equal(t, before.MinimumThroughput, after.MinimumThroughput)
	assert.Equal(t, before.FailureRatio, after.FailureRatio)
	s := snapshotOf(t, b, "a")
	assert.Equal(t, endpointpolicy.Closed, s.State)
	assert.Equal(t, uint64(2), s.Failures)
	attempt(t, b, "a", sendFailure)
	assert.Equal(t, endpointpolicy.Open, b.State("a"), "the old thresholds still apply")
}

func TestBreakerSampling(t *testing.T) {
	t.Run("goaway and cancellation are not samples", func(t *testing.T) {
		b, _ := newBreaker(t, endpointpolicy.CircuitBreakerOptions{MinimumThroughput: 1})
		attempt(t, b, "a", goAway)
		attempt(t, b, "a", cancelled)
		attempt(t, b, "a", spi.AttemptOutcome{Kind: 99})
		s := snapshotOf(t, b, "a")
		assert.Equal(t, endpointpolicy.Closed, s.State)
		assert.Zero(t, s.Successes+s.Failures)
		assert.Zero(t, s.Outstanding)
	})
	t.Run("remote errors by code", func(t *testing.T) {
		b, _ := newBreaker(t, endpointpolicy.CircuitBreakerOptions{MinimumThroughput: 4, FailureRatio: 1})
		attempt(t, b, "a", remote(3))  // InvalidArgument: the endpoint is healthy
		attempt(t, b, "a", remote(14)) // Unavailable
		attempt(t, b, "a", remote(13)) // Internal
		attempt(t, b, "a", spi.AttemptOutcome{Kind: spi.OutcomeDeadlineExceeded})
		s := snapshotOf(t, b, "a")
		assert.Equal(t, [2]uint64{1, 3}, [2]uint64{s.Successes, s.Failures})
	})
	t.Run("custom classifier", func(t *testing.T) {
		b, _ := newBreaker(t, endpointpolicy.CircuitBreakerOptions{
			MinimumThroughput: 3,
			IsFailure:         func(o spi.AttemptOutcome) bool { return o.Kind == spi.OutcomeRemoteError && o.Code == 5 },
		})
		attempt(t, b, "a", sendFailure)
		attempt(t, b, "a", remote(5))
		s := snapshotOf(t, b, "a")
		assert.Equal(t, [2]uint64{1, 1}, [2]uint64{s.Successes, s.Failures})
		attempt(t, b, "a", remote(5))
		assert.Equal(t, endpointpolicy.Open, b.State("a"))
	})
	t.Run("a panicking classifier samples nothing", func(t *testing.T) {
		b, clk := newBreaker(t, endpointpolicy.CircuitBreakerOptions{
			MinimumThroughput: 1, BreakDuration: time.Second,
			IsFailure: func(o spi.AttemptOutcome) bool {
				if o.Kind == spi.OutcomeConnectionClosed {
					panic("classifier broke")
				}
				return o.Kind == spi.OutcomeSendFailure
			},
		})
		closed := spi.AttemptOutcome{Kind: spi.OutcomeConnectionClosed}
		assert.NotPanics(t, func() { attempt(t, b, "a", closed) })
		assert.Zero(t, snapshotOf(t, b, "a").Outstanding)
		attempt(t, b, "a", sendFailure)
		clk.Advance(time.Second)
		probe := b.TryAcquire("a", "m")
		require.True(t, probe.Allowed)
		assert.NotPanics(t, func() { b.Report(closed, probe.Token) })
		assert.True(t, b.TryAcquire("a", "m").Allowed, "the probe's place was freed")
	})
	t.Run("a panicking clock in Report samples nothing", func(t *testing.T) {
		b, _ := newBreaker(t, endpointpolicy.CircuitBreakerOptions{MinimumThroughput: 1})
		d := b.TryAcquire("a", "m")
		require.NoError(t, b.Update(endpointpolicy.CircuitBreakerOptions{MinimumThroughput: 1, Clock: panicClock{}}))
		assert.NotPanics(t, func() { b.Report(sendFailure, d.Token) })
		require.NoError(t, b.Update(endpointpolicy.CircuitBreakerOptions{MinimumThroughput: 1, Clock: newFakeClock()}))
		s := snapshotOf(t, b, "a")
		assert.Equal(t, endpointpolicy.Closed, s.State)
		assert.Zero(t, s.Outstanding)
	})
}

func TestBreakerStaleTokens(t *testing.T) {
	t.Run("closed-period results reported after opening are ignored", func(t *testing.T) {
		b, clk := newBreaker(t, endpointpolicy.CircuitBreakerOptions{MinimumThroughput: 2, BreakDuration: time.Second})
		early := b.TryAcquire("a", "m")
		require.True(t, early.Allowed)
		attempts(t, b, "a", sendFailure, 2)
		require.Equal(t, endpointpolicy.Open, b.State("a"))
		b.Report(success, early.Token)
		assert.Equal(t, endpointpolicy.Open, b.State("a"))
		assert.Zero(t, snapshotOf(t, b, "a").Outstanding)

		clk.Advance(time.Second)
		late := b.TryAcquire("a", "m") // a probe
		attempts(t, b, "a", sendFailure, 0)
		b.Report(success, late.Token)
		require.Equal(t, endpointpolicy.Closed, b.State("a"))
		b.Report(sendFailure, early.Token) // repeated and stale
		s := snapshotOf(t, b, "a")
		assert.Zero(t, s.Successes+s.Failures)
	})
	t.Run("a probe counts only in the half-open period that issued it", func(t *testing.T) {
		b, clk := newBreaker(t, endpointpolicy.CircuitBreakerOptions{MinimumThroughput: 1, BreakDuration: time.Second, HalfOpenMaxCalls: 2})
		attempt(t, b, "a", sendFailure)
		clk.Advance(time.Second)
		pa, pb := b.TryAcquire("a", "m"), b.TryAcquire("a", "m")
		b.Report(sendFailure, pa.Token) // reopens
		clk.Advance(time.Second)
		pc := b.TryAcquire("a", "m") // second half-open period
		require.True(t, pc.Allowed)
		b.Report(success, pb.Token) // from the first period: ignored
		assert.Equal(t, endpointpolicy.HalfOpen, b.State("a"))
		assert.Equal(t, 1, snapshotOf(t, b, "a").Probes)
		b.Report(success, pc.Token)
		assert.Equal(t, endpointpolicy.Closed, b.State("a"))
	})
}
