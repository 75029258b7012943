package endpointpolicy_test

import (
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/endpointpolicy"
	"github.com/sluicerpc/sluice/spi"
)

// fixedRand returns r and counts its calls.
type fixedRand struct {
	r     atomic.Uint64 // math.Float64bits
	calls atomic.Int64
}

func newFixedRand(r float64) *fixedRand {
	f := &fixedRand{}
	f.r.Store(math.Float64bits(r))
	return f
}

func (f *fixedRand) set(r float64) { f.r.Store(math.Float64bits(r)) }

func (f *fixedRand) Float64() float64 {
	f.calls.Add(1)
	return math.Float64frombits(f.r.Load())
}

func newThrottle(t *testing.T, o endpointpolicy.AdaptiveThrottleOptions) (*endpointpolicy.AdaptiveThrottle, *fakeClock, *fixedRand) {
	t.Helper()
	clk, rnd := newFakeClock(), newFixedRand(0.5)
	o.Clock, o.Rand = clk, rnd.Float64
	th, err := endpointpolicy.NewAdaptiveThrottle(o)
	require.NoError(t, err)
	return th, clk, rnd
}

func TestRejectProbability(t *testing.T) {
	cases := []struct {
		requests, accepts uint64
		k, want           float64
	}{
		{0, 0, 2, 0},
		{1, 0, 2, 0.5},
		{10, 0, 2, 10.0 / 11},
		{10, 5, 2, 0},
		{10, 4, 2, 2.0 / 11},
		{10, 4, 1, 6.0 / 11},
		{100, 10, 2, 80.0 / 101},
		{100, 100, 1, 0},
		{3, 10, 2, 0},
	}
	for _, tc := range cases {
		assert.InDelta(t, tc.want, endpointpolicy.RejectProbability(tc.requests, tc.accepts, tc.k), 1e-12, "%+v", tc)
	}
}

func TestAdaptiveThrottleOptions(t *testing.T) {
	th, err := endpointpolicy.NewAdaptiveThrottle(endpointpolicy.AdaptiveThrottleOptions{})
	require.NoError(t, err)
	o := th.Options()
	assert.Equal(t, 2.0, o.K)
	assert.Equal(t, 2*time.Minute, o.Window)
	assert.Equal(t, spi.SystemClock{}, o.Clock)
	require.NotNil(t, o.Rand)
	r := o.Rand()
	assert.True(t, r >= 0 && r < 1)

	cases := []struct {
		name  string
		o     endpointpolicy.AdaptiveThrottleOptions
		field string
	}{
		{"K 1", endpointpolicy.AdaptiveThrottleOptions{K: 1}, ""},
		{"K 10", endpointpolicy.AdaptiveThrottleOptions{K: 10, Window: time.Second}, ""},
		{"K below 1", endpointpolicy.AdaptiveThrottleOptions{K: 0.5}, "AdaptiveThrottleOptions.K is 0.5"},
		{"K negative", endpointpolicy.AdaptiveThrottleOptions{K: -2}, "AdaptiveThrottleOptions.K is -2"},
		{"K NaN", endpointpolicy.AdaptiveThrottleOptions{K: math.NaN()}, "AdaptiveThrottleOptions.K is NaN"},
		{"K infinite", endpointpolicy.AdaptiveThrottleOptions{K: math.Inf(1)}, "AdaptiveThrottleOptions.K is +Inf"},
		{"window negative", endpointpolicy.AdaptiveThrottleOptions{Window: -time.Second}, "AdaptiveThrottleOptions.Window is -1s"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.o.Validate()
			_, nerr := endpointpolicy.NewAdaptiveThrottle(tc.o)
			if tc.field == "" {
				assert.NoError(t, err)
				assert.NoError(t, nerr)
				return
			}
			assert.ErrorIs(t, err, endpointpolicy.ErrInvalidOptions)
			assert.ErrorContains(t, err, tc.field)
			assert.Equal(t, err, nerr)
		})
	}
}

func TestThrottleFormula(t *testing.T) {
	th, _, rnd := newThrottle(t, endpointpolicy.AdaptiveThrottleOptions{K: 2})
	// 4 accepted attempts: p stays 0 and the random source is not asked.
	attempts(t, th, "a", success, 4)
	assert.Zero(t, rnd.calls.Load())
	// Throttled answers: requests grow, accepts do not. p stays 0 while
	// requests <= 2*accepts = 8.
	attempts(t, th, "a", remote(8), 4)
	s := th.Stats("a")
	assert.Equal(t, uint64(8), s.Requests)
	assert.Equal(t, uint64(4), s.Accepts)
	assert.Zero(t, s.RejectProbability)
	attempt(t, th, "a", remote(14))
	assert.Zero(t, rnd.calls.Load())
	// requests 9, accepts 4: p = (9-8)/10 = 0.1.
	assert.InDelta(t, 0.1, th.Stats("a").RejectProbability, 1e-12)
	rnd.set(0.1) // not < 0.1: allowed
	d := th.TryAcquire("a", "m")
	require.True(t, d.Allowed)
	assert.Equal(t, int64(1), rnd.calls.Load())
	th.Report(sendFailure, d.Token)
	// requests 10, accepts 4: p = 2/11.
	assert.InDelta(t, 2.0/11, th.Stats("a").RejectProbability, 1e-12)
	rnd.set(2.0/11 - 1e-9)
	assert.Equal(t, spi.EndpointDecision{}, th.TryAcquire("a", "m"), "a refusal has no RetryAfter")
	s = th.Stats("a")
	assert.Equal(t, uint64(11), s.Requests, "a refused attempt is a request")
	assert.Equal(t, uint64(4), s.Accepts)
	assert.Zero(t, s.Outstanding)
	assert.Equal(t, endpointpolicy.ThrottleStats{}, th.Stats("unknown"))
}

func TestThrottleDeterministicRejection(t *testing.T) {
	th, _, rnd := newThrottle(t, endpointpolicy.AdaptiveThrottleOptions{K: 2})
	rnd.set(0.9999)
	attempts(t, th, "a", remote(8), 10)
	rnd.set(0.5)
	// p = 10/11 now; r = 0.5 rejects every time, and p grows.
	for range 5 {
		assert.False(t, th.TryAcquire("a", "m").Allowed)
	}
	assert.InDelta(t, 15.0/16, th.Stats("a").RejectProbability, 1e-12)
	rnd.set(0.99)
	assert.True(t, th.TryAcquire("a", "m").Allowed)
	assert.True(t, th.TryAcquire("b", "m").Allowed, "endpoints are independent")
}

func TestThrottleVerdicts(t *testing.T) {
	cases := []struct {
		name              string
		o                 spi.AttemptOutcome
		requests, accepts uint64
	}{
		{"success", success, 1, 1},
		{"remote InvalidArgument", remote(3), 1, 1},
		{"remote Internal", remote(13), 1, 1},
		{"remote ResourceExhausted", remote(8), 1, 0},
		{"remote Unavailable", remote(14), 1, 0},
		{"send failure", sendFailure, 1, 0},
		{"connection closed", spi.AttemptOutcome{Kind: spi.OutcomeConnectionClosed}, 1, 0},
		{"deadline", spi.AttemptOutcome{Kind: spi.OutcomeDeadlineExceeded}, 1, 0},
		{"undefined kind", spi.AttemptOutcome{Kind: 42}, 1, 0},
		{"goaway withdraws", goAway, 0, 0},
		{"cancelled withdraws", cancelled, 0, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			th, _, _ := newThrottle(t, endpointpolicy.AdaptiveThrottleOptions{})
			attempt(t, th, "a", tc.o)
			s := th.Stats("a")
			assert.Equal(t, [2]uint64{tc.requests, tc.accepts}, [2]uint64{s.Requests, s.Accepts})
		})
	}
}

func TestThrottleWindowExpiry(t *testing.T) {
	th, clk, rnd := newThrottle(t, endpointpolicy.AdaptiveThrottleOptions{Window: 10 * time.Second})
	rnd.set(0.9999) // allow everything
	attempts(t, th, "a", remote(8), 5)
	clk.Advance(5 * time.Second)
	attempts(t, th, "a", remote(8), 1)
	assert.Equal(t, uint64(6), th.Stats("a").Requests)
	clk.Advance(5 * time.Second)
	assert.Equal(t, uint64(1), th.Stats("a").Requests, "the first bucket slid out")
	clk.Advance(5 * time.Second)
	s := th.Stats("a")
	assert.Zero(t, s.Requests)
	assert.Zero(t, s.RejectProbability)

	// A withdrawal whose bucket slid out withdraws nothing.
	d := th.TryAcquire("a", "m")
	clk.Advance(20 * time.Second)
	attempts(t, th, "a", remote(8), 2)
	th.Report(cancelled, d.Token)
	assert.Equal(t, uint64(2), th.Stats("a").Requests)
	assert.Zero(t, th.Stats("a").Outstanding)
}

func TestThrottlePanickingClockInReport(t *testing.T) {
	clk := newFakeClock()
	var broken atomic.Bool
	th, err := endpointpolicy.NewAdaptiveThrottle(endpointpolicy.AdaptiveThrottleOptions{Clock: clockFunc(func() time.Time {
		if broken.Load() {
			panic("clock broke")
		}
		return clk.Now()
	})})
	require.NoError(t, err)
	d := th.TryAcquire("a", "m")
	broken.Store(true)
	assert.NotPanics(t, func() { th.Report(success, d.Token) })
	broken.Store(false)
	s := th.Stats("a")
	assert.Zero(t, s.Accepts)
	assert.Zero(t, s.Outstanding)
}

type clockFunc func() time.Time

func (f clockFunc) Now() time.Time { return f() }
