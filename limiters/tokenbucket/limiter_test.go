package tokenbucket_test

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/limiters/tokenbucket"
	"github.com/sluicerpc/sluice/spi"
)

// t0 is the origin of every bucket in these tests; at(d) is t0 + d.
var t0 = time.Date(2030, time.January, 1, 0, 0, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

var (
	granted = spi.Grant()
	never   = spi.RefuseNever()
)

// until is the refusal with a retry at t0 + d.
func until(d time.Duration) spi.Decision { return spi.RefuseUntil(at(d)) }

func discrete(limit, perPeriod int64, period time.Duration) tokenbucket.Options {
	return tokenbucket.Options{TokenLimit: limit, TokensPerPeriod: perPeriod, Period: period}
}

func continuous(limit, perPeriod int64, period time.Duration) tokenbucket.Options {
	return tokenbucket.Options{TokenLimit: limit, TokensPerPeriod: perPeriod, Period: period, Continuous: true}
}

func unlimited(o tokenbucket.Options) tokenbucket.Options {
	o.Unlimited = true
	return o
}

// newBucket returns a full bucket with its origin at t0.
func newBucket(t testing.TB, o tokenbucket.Options) *tokenbucket.Limiter {
	t.Helper()
	l, err := tokenbucket.New(o, t0)
	require.NoError(t, err)
	return l
}

// take requires TryAcquire(when, n) to grant.
func take(t testing.TB, l *tokenbucket.Limiter, when time.Time, n int64) {
	t.Helper()
	require.Equal(t, granted, l.TryAcquire(when, n), "TryAcquire(%v, %d)", when.Sub(t0), n)
}

// tokens returns the whole tokens held at when (negative in debt).
func tokens(l *tokenbucket.Limiter, when time.Time) int64 {
	s := l.Snapshot(when)
	return s.Limit - s.InUse
}

// requireExactHint checks that d is a refusal whose retry time is exact for
// n units: one nanosecond earlier the request is still refused (with the
// same hint), and at the hint it is granted. It takes the n units.
func requireExactHint(t testing.TB, l *tokenbucket.Limiter, n int64, d spi.Decision) {
	t.Helper()
	require.Equal(t, spi.HintAt, d.Hint, "refusal with a retry time")
	require.False(t, d.Granted)
	before := d.RetryAt.Add(-time.Nanosecond)
	require.Equal(t, d, l.TryAcquire(before, n), "refused 1ns before the hint, with the same hint")
	require.Equal(t, granted, l.TryAcquire(d.RetryAt, n), "granted at the hint")
}

func TestRefill(t *testing.T) {
	type point struct {
		at   time.Duration
		want int64
	}
	tests := []struct {
		name   string
		opts   tokenbucket.Options
		drain  time.Duration // when the whole bucket is taken
		points []point
	}{
		{"discrete: 3 tokens at each 100ms boundary", discrete(10, 3, 100*time.Millisecond), 0, []point{
			{0, 0}, {100*time.Millisecond - 1, 0}, {100 * time.Millisecond, 3}, {199 * time.Millisecond, 3},
			{200 * time.Millisecond, 6}, {300 * time.Millisecond, 9}, {400 * time.Millisecond, 10}, {time.Hour, 10},
		}},
		{"discrete: boundaries are aligned to the origin, not to the drain", discrete(10, 3, 100*time.Millisecond), 150 * time.Millisecond, []point{
			{150 * time.Millisecond, 0}, {200*time.Millisecond - 1, 0}, {200 * time.Millisecond, 3}, {249 * time.Millisecond, 3},
			{300 * time.Millisecond, 6}, {600 * time.Millisecond, 10},
		}},
		{"discrete: refill above the capacity is capped", discrete(2, 5, time.Second), 0, []point{
			{time.Second - 1, 0}, {time.Second, 2}, {10 * time.Second, 2},
		}},
		{"continuous: 3 per 100ms, whole tokens reported", continuous(10, 3, 100*time.Millisecond), 0, []point{
			{0, 0}, {33333333, 0}, {33333334, 1}, {50 * time.Millisecond, 1}, {100 * time.Millisecond, 3},
			{333333333, 9}, {333333334, 10}, {time.Hour, 10},
		}},
		{"continuous: whole-nanosecond emission interval", continuous(5, 1000, time.Second), 0, []point{
			{time.Millisecond - 1, 0}, {time.Millisecond, 1}, {4999999, 4}, {5 * time.Millisecond, 5}, {time.Minute, 5},
		}},
		{"continuous: several tokens per nanosecond", continuous(1_000_000, 1_000_000, time.Microsecond), 0, []point{
			{0, 0}, {1, 1000}, {999, 999_000}, {time.Microsecond, 1_000_000}, {time.Second, 1_000_000},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newBucket(t, tt.opts)
			assert.Equal(t, tt.opts.TokenLimit, tokens(l, at(tt.drain)), "starts full")
			take(t, l, at(tt.drain), tt.opts.TokenLimit)
			for _, p := range tt.points {
				assert.Equal(t, p.want, tokens(l, at(p.at)), "tokens at %v", p.at)
			}
			// Snapshot does not change the bucket: the same reads again.
			for _, p := range tt.points {
				assert.Equal(t, p.want, tokens(l, at(p.at)), "tokens at %v (again)", p.at)
			}
		})
	}
}

func TestRefusalHintIsExact(t *testing.T) {
	tests := []struct {
		name  string
		opts  tokenbucket.Options
		setup func(t *testing.T, l *tokenbucket.Limiter) time.Time // returns when to ask
		n     int64
		want  spi.Decision
	}{
		{"discrete: one token after the drain", discrete(10, 3, 100*time.Millisecond), drainAt(0), 1, until(100 * time.Millisecond)},
		{"discrete: a whole refill", discrete(10, 3, 100*time.Millisecond), drainAt(0), 3, until(100 * time.Millisecond)},
		{"discrete: one more than a refill", discrete(10, 3, 100*time.Millisecond), drainAt(0), 4, until(200 * time.Millisecond)},
		{"discrete: the whole capacity", discrete(10, 3, 100*time.Millisecond), drainAt(0), 10, until(400 * time.Millisecond)},
		{"discrete: asked mid-period", discrete(10, 3, 100*time.Millisecond), drainAt(150 * time.Millisecond), 2, until(200 * time.Millisecond)},
		{"discrete: two left, three wanted", discrete(10, 3, 100*time.Millisecond), func(t *testing.T, l *tokenbucket.Limiter) time.Time {
			take(t, l, at(0), 8)
			return at(10 * time.Millisecond)
		}, 3, until(100 * time.Millisecond)},
		{"continuous: fractional interval rounds up", continuous(10, 3, 100*time.Millisecond), drainAt(0), 1, until(33333334)},
		{"continuous: three tokens", continuous(10, 3, 100*time.Millisecond), drainAt(0), 3, until(100 * time.Millisecond)},
		{"continuous: the whole capacity", continuous(10, 3, 100*time.Millisecond), drainAt(0), 10, until(333333334)},
		{"continuous: a carried fraction counts", continuous(10, 3, 100*time.Millisecond), func(t *testing.T, l *tokenbucket.Limiter) time.Time {
			take(t, l, at(0), 10)
			take(t, l, at(50*time.Millisecond), 1) // 1.5 held, 0.5 left
			return at(50 * time.Millisecond)
		}, 1, until(50*time.Millisecond + 16666667)},
		{"continuous: one per second", continuous(1, 1, time.Second), drainAt(0), 1, until(time.Second)},
		{"more than the capacity", discrete(10, 3, 100*time.Millisecond), drainAt(0), 11, never},
		{"more than the capacity while full", continuous(10, 3, 100*time.Millisecond), func(*testing.T, *tokenbucket.Limiter) time.Time { return at(0) }, 11, never},
		{"max int64 units", discrete(10, 3, 100*time.Millisecond), drainAt(0), math.MaxInt64, never},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newBucket(t, tt.opts)
			when := tt.setup(t, l)
			before := l.Snapshot(when)
			got := l.TryAcquire(when, tt.n)
			require.Equal(t, tt.want, got)
			require.Equal(t, before, l.Snapshot(when), "a refusal consumes nothing")
			if got.Hint == spi.HintAt {
				requireExactHint(t, l, tt.n, got)
			}
		})
	}
}

// drainAt returns a setup that takes the whole (full) bucket at t0 + d and
// asks at the same instant.
func drainAt(d time.Duration) func(*testing.T, *tokenbucket.Limiter) time.Time {
	return func(t *testing.T, l *tokenbucket.Limiter) time.Time {
		take(t, l, at(d), l.Options().TokenLimit)
		return at(d)
	}
}

func TestGrantsUpToTheTokensHeld(t *testing.T) {
	for _, o := range []tokenbucket.Options{discrete(5, 1, time.Second), continuous(5, 1, time.Second)} {
		t.Run(fmt.Sprintf("continuous=%v", o.Continuous), func(t *testing.T) {
			l := newBucket(t, o)
			for i := range int64(5) {
				require.Equal(t, spi.Snapshot{Kind: "tokenbucket", Limit: 5, InUse: i, Available: 5 - i}, l.Snapshot(t0))
				take(t, l, t0, 1)
			}
			require.Equal(t, until(time.Second), l.TryAcquire(t0, 1))
			require.Equal(t, spi.Snapshot{Kind: "tokenbucket", Limit: 5, InUse: 5, Available: 0}, l.Snapshot(t0))
		})
	}
}

func TestZeroUnitsAreAlwaysGranted(t *testing.T) {
	l := newBucket(t, discrete(1, 1, time.Second))
	take(t, l, t0, 1)
	require.Equal(t, granted, l.TryAcquire(t0, 0))
	l.Seal(t0)
	require.Equal(t, granted, l.TryAcquire(t0, 0), "even after Seal: nothing is taken")
}

func TestNegativeUnitsPanic(t *testing.T) {
	l := newBucket(t, discrete(1, 1, time.Second))
	assert.PanicsWithValue(t, "tokenbucket: acquire of negative units -1", func() { l.TryAcquire(t0, -1) })
	assert.PanicsWithValue(t, "tokenbucket: cancel of negative units -2", func() { l.Cancel(t0, -2) })
	assert.PanicsWithValue(t, "tokenbucket: release of negative units -3", func() { l.Release(t0, -3) })
	assert.Equal(t, int64(1), tokens(l, t0))
}

func TestReleaseIsANoOp(t *testing.T) {
	l := newBucket(t, discrete(3, 1, time.Second))
	take(t, l, t0, 2)
	l.Release(t0, 2)
	assert.Equal(t, int64(1), tokens(l, t0), "taken quota stays taken")
}

func TestCancel(t *testing.T) {
	tests := []struct {
		name   string
		opts   tokenbucket.Options
		take   int64
		cancel int64
		want   int64
	}{
		{"gives the units back", discrete(10, 1, time.Second), 5, 5, 10},
		{"part of a grant", discrete(10, 1, time.Second), 5, 3, 8},
		{"never above the capacity", discrete(10, 1, time.Second), 2, 5, 10},
		{"huge cancel is capped", continuous(10, 3, time.Second), 2, math.MaxInt64, 10},
		{"continuous", continuous(10, 3, time.Second), 7, 7, 10},
		{"unlimited: no-op", unlimited(discrete(10, 1, time.Second)), 4, 4, 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newBucket(t, tt.opts)
			take(t, l, t0, tt.take)
			l.Cancel(t0, tt.cancel)
			assert.Equal(t, tt.want, tokens(l, t0))
			l.Cancel(t0, 0)
			assert.Equal(t, tt.want, tokens(l, t0))
		})
	}
}

func TestCancelUndoesAnAllOrNothingAcquisition(t *testing.T) {
	// The kernel takes from every scope, one refuses, it cancels the
	// others at the same instant: the bucket is as if nothing happened.
	l := newBucket(t, continuous(4, 1, time.Second))
	take(t, l, at(0), 4)
	take(t, l, at(1500*time.Millisecond), 1) // 1.5 -> 0.5
	before := l.Snapshot(at(1700 * time.Millisecond))
	take(t, l, at(1700*time.Millisecond), 0)
	l.Cancel(at(1700*time.Millisecond), 0)
	d := l.TryAcquire(at(1700*time.Millisecond), 1)
	requireExactHint(t, l, 1, d) // taken at 2.0s...
	l.Cancel(d.RetryAt, 1)       // ...and given back at once
	assert.Equal(t, before, l.Snapshot(at(1700*time.Millisecond)))
	assert.Equal(t, until(2*time.Second), l.TryAcquire(at(1700*time.Millisecond), 1))
}

func TestUnlimited(t *testing.T) {
	l := newBucket(t, unlimited(discrete(10, 2, 100*time.Millisecond)))
	for range 3 {
		take(t, l, t0, 7) // 10 -> 3 -> 0 -> 0: the bucket never goes below zero
	}
	take(t, l, t0, 1000) // more than the capacity: unlimited grants it
	assert.Equal(t, spi.Snapshot{Kind: "tokenbucket", Limit: 10, InUse: 10, Available: 0}, l.Snapshot(t0))

	assert.Equal(t, int64(2), tokens(l, at(100*time.Millisecond)), "refill goes on")
	take(t, l, at(100*time.Millisecond), 1)
	assert.Equal(t, int64(1), tokens(l, at(100*time.Millisecond)), "and grants count")
	assert.Equal(t, int64(10), tokens(l, at(time.Hour)))
}

func TestTimeBeforeTheOriginCountsAsTheOrigin(t *testing.T) {
	l := newBucket(t, discrete(2, 1, time.Second))
	take(t, l, at(-time.Hour), 2)
	assert.Equal(t, until(time.Second), l.TryAcquire(at(-time.Minute), 1))
	assert.Equal(t, int64(0), tokens(l, at(-time.Hour)))
	assert.Equal(t, int64(1), tokens(l, at(time.Second)))
}

func TestTimeGoingBackwardsIsNeverLooser(t *testing.T) {
	// A request that read the clock before a later one was served gets no
	// more than the bucket held at the later instant.
	l := newBucket(t, discrete(2, 1, time.Second))
	take(t, l, at(0), 2)
	take(t, l, at(3*time.Second), 2)
	assert.Equal(t, until(4*time.Second), l.TryAcquire(at(2*time.Second), 1))
}

func TestLongRunsStayExact(t *testing.T) {
	// Extreme rates make the credit clock large quickly; the limiter then
	// rebuilds its config (keeping the phase), which must be invisible.
	for _, o := range []tokenbucket.Options{
		continuous(tokenbucket.MaxTokenLimit, tokenbucket.MaxTokenLimit, time.Microsecond),
		continuous(1_000_000, 999_983, time.Millisecond), // Q/P = 999983/1000000 per ns
		discrete(tokenbucket.MaxTokenLimit, tokenbucket.MaxTokenLimit, time.Microsecond),
		discrete(3, 1, 7*time.Microsecond),
	} {
		t.Run(fmt.Sprintf("%+v", o), func(t *testing.T) {
			l := newBucket(t, o)
			m := newModel(o, t0)
			when := t0
			configs := map[any]bool{tokenbucket.CurrentConfig(l): true}
			defer func() {
				if o.Continuous && o.Period == time.Microsecond {
					// 2^31 units per ns: the clock outgrows a config in 0.54 s.
					assert.Greater(t, len(configs), 100, "the limiter rebuilt its config as the clock grew")
				}
			}()
			for i := range 200 {
				configs[tokenbucket.CurrentConfig(l)] = true
				when = when.Add(time.Duration(i) * 97 * time.Millisecond)
				n := min(o.TokenLimit, int64(1+i%5)*o.TokensPerPeriod/3+1)
				require.Equal(t, m.tryAcquire(when, n), l.TryAcquire(when, n), "step %d", i)
				require.Equal(t, m.snapshot(when), l.Snapshot(when), "step %d", i)
				// Drain what is left and check the refusal's hint.
				if left := m.snapshot(when).Available; left > 0 {
					require.Equal(t, m.tryAcquire(when, left), l.TryAcquire(when, left))
				}
				require.Equal(t, m.tryAcquire(when, n), l.TryAcquire(when, n), "step %d drained", i)
			}
		})
	}
}

func TestImplementsTheSPI(t *testing.T) {
	var l spi.Limiter = newBucket(t, discrete(2, 1, time.Second))
	require.Equal(t, granted, l.TryAcquire(t0, 2))
	require.Equal(t, until(time.Second), l.TryAcquire(t0, 1))
	l.Cancel(t0, 1)
	l.Release(t0, 1)
	require.NoError(t, l.Reconfigure(t0, spi.Params{"tokenLimit": 5, "tokensPerPeriod": 1, "period": int64(time.Second)}))
	assert.Equal(t, spi.Snapshot{Kind: "tokenbucket", Limit: 5, InUse: 4, Available: 1}, l.Snapshot(t0))
	_, ok := l.(spi.Handover)
	assert.True(t, ok)
	_, ok = l.(spi.Inheritor)
	assert.True(t, ok)
}
