package tokenbucket_test

import (
	"math/big"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/time/rate"
	"pgregory.net/rapid"

	"github.com/sluicerpc/sluice/limiters/tokenbucket"
)

// x/time/rate inside where it fits: a continuous bucket without
// reconfiguration is rate.NewLimiter(rate.Every(period/tokensPerPeriod),
// tokenLimit). The cases below are the ones where x/time/rate's float
// arithmetic is exact, so the comparison needs no tolerance at all:
//
//   - the emission interval period/tokensPerPeriod is a whole number of
//     nanoseconds, and rate.Every(interval) is exactly 1/interval;
//   - time advances by whole milliseconds, and for every elapsed time of at
//     most 1 s, Duration.Seconds() × limit is exactly elapsed/interval
//     (TestXTimeRateArithmeticIsExact checks this for every millisecond);
//   - tokenLimit × interval <= 1 s, so after more than 1 s without a grant
//     both buckets are full whatever the rounding of the longer elapsed
//     time (x/time/rate's advance caps at the burst).
//
// Within these bounds every x/time/rate token count is a multiple of
// 1ms/interval held exactly in a float64, so its decisions are the exact
// ones, and ours must equal them.
var xtimeCases = []struct {
	period    time.Duration
	perPeriod int64
}{
	{time.Second, 1000},           // 1 ms
	{10 * time.Millisecond, 5},    // 2 ms
	{4 * time.Millisecond, 1},     // 4 ms
	{time.Millisecond, 2},         // 500 µs
	{100 * time.Millisecond, 400}, // 250 µs
}

func TestXTimeRateArithmeticIsExact(t *testing.T) {
	for _, c := range xtimeCases {
		interval := c.period / time.Duration(c.perPeriod)
		require.Equal(t, c.period, interval*time.Duration(c.perPeriod), "whole-nanosecond interval")
		limit := rate.Every(interval)
		require.Equal(t, float64(time.Second/interval), float64(limit), "rate.Every is exact")
		for ms := range int64(1001) {
			d := time.Duration(ms) * time.Millisecond
			got := new(big.Rat).SetFloat64(d.Seconds() * float64(limit))
			want := big.NewRat(int64(d), int64(interval))
			require.Zero(t, got.Cmp(want), "%v at interval %v: x/time/rate computes %v tokens", d, interval, got)
		}
	}
}

func TestMatchesXTimeRate(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := rapid.SampledFrom(xtimeCases).Draw(t, "case")
		interval := c.period / time.Duration(c.perPeriod)
		burst := rapid.Int64Range(1, min(int64(time.Second/interval), 64)).Draw(t, "tokenLimit")

		ours, err := tokenbucket.New(continuous(burst, c.perPeriod, c.period), t0)
		if err != nil {
			t.Fatal(err)
		}
		theirs := rate.NewLimiter(rate.Every(interval), int(burst))

		now := t0
		steps := rapid.IntRange(1, 300).Draw(t, "steps")
		for i := range steps {
			now = now.Add(time.Duration(rapid.IntRange(0, 1500).Draw(t, "advance ms")) * time.Millisecond)
			n := rapid.Int64Range(0, burst+1).Draw(t, "n")

			// State first: x/time/rate's token count at a whole
			// millisecond is exact, so its floor is our whole tokens.
			if want, got := int64(theirs.TokensAt(now)), tokens(ours, now); want != got {
				t.Fatalf("step %d at %v: x/time/rate holds %v tokens, ours %d", i, now.Sub(t0), theirs.TokensAt(now), got)
			}
			want := theirs.AllowN(now, int(n))
			got := ours.TryAcquire(now, n)
			if got.Granted != want {
				t.Fatalf("step %d at %v: AllowN(%d) = %v, TryAcquire = %+v", i, now.Sub(t0), n, want, got)
			}
		}
	})
}
