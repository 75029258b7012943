package tokenbucket_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/limiters/tokenbucket"
	"github.com/sluicerpc/sluice/spi"
)

func TestSealReturnsTheDebtExactly(t *testing.T) {
	tests := []struct {
		name string
		opts tokenbucket.Options
		take int64
		when time.Duration
		want []spi.Usage
	}{
		// 3 left at 0.5 s; +2 at 1, 2, 3 and 4 s: full at 4 s.
		{"discrete", discrete(10, 2, time.Second), 7, 500 * time.Millisecond, []spi.Usage{{Units: 7, Until: at(4 * time.Second)}}},
		// 7 tokens at 3/s: 2.333... s, rounded up to the nanosecond.
		{"continuous", continuous(10, 3, time.Second), 7, 0, []spi.Usage{{Units: 7, Until: at(2333333334)}}},
		{"full", discrete(10, 2, time.Second), 0, 0, nil},
		{"empty continuous", continuous(10, 10, time.Second), 10, time.Minute, []spi.Usage{{Units: 10, Until: at(time.Minute + time.Second)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newBucket(t, tt.opts)
			twin := newBucket(t, tt.opts)
			if tt.take > 0 {
				take(t, l, at(tt.when), tt.take)
				take(t, twin, at(tt.when), tt.take)
			}
			usage := l.Seal(at(tt.when))
			require.Equal(t, tt.want, usage)
			for _, u := range usage {
				// Until is exact: the unsealed twin is full at Until
				// and not one nanosecond earlier.
				assert.Less(t, tokens(twin, u.Until.Add(-time.Nanosecond)), tt.opts.TokenLimit, "not full before Until")
				assert.Equal(t, tt.opts.TokenLimit, tokens(twin, u.Until), "full at Until")
			}
		})
	}
}

func TestAfterSeal(t *testing.T) {
	l := newBucket(t, discrete(10, 2, time.Second))
	take(t, l, at(0), 6)
	require.Equal(t, []spi.Usage{{Units: 6, Until: at(3 * time.Second)}}, l.Seal(at(0)))

	assert.Equal(t, never, l.TryAcquire(at(0), 1), "refused: the caller goes to the successor")
	assert.Equal(t, never, l.TryAcquire(at(time.Hour), 1), "even when it would have refilled")
	assert.Equal(t, never, l.TryAcquire(at(0), 11))

	l.Cancel(at(0), 6) // the grant was handed over: ignored
	assert.Equal(t, spi.Snapshot{Kind: "tokenbucket", Limit: 10, InUse: 6, Available: 0}, l.Snapshot(at(0)))
	assert.Equal(t, spi.Snapshot{Kind: "tokenbucket", Limit: 10, InUse: 2, Available: 0}, l.Snapshot(at(2*time.Second)), "the handed-over debt is repaid as it would have been")
	assert.Equal(t, spi.Snapshot{Kind: "tokenbucket", Limit: 10, InUse: 0, Available: 0}, l.Snapshot(at(time.Hour)))

	assert.ErrorIs(t, l.Update(at(0), discrete(20, 2, time.Second)), tokenbucket.ErrSealed)
	assert.ErrorIs(t, l.Reconfigure(at(0), tokenbucket.Spec(20, 2, time.Second).Params), tokenbucket.ErrSealed)
	assert.Equal(t, discrete(10, 2, time.Second), l.Options())
	l.Inherit(at(0), []spi.Usage{{Units: 5, Until: at(time.Hour)}})
	assert.Equal(t, int64(4), tokens(l, at(0)), "Inherit after Seal is ignored")
	assert.Nil(t, l.Seal(at(0)), "a second Seal hands nothing over")
}

func TestInheritBarrier(t *testing.T) {
	l := newBucket(t, discrete(10, 1, 100*time.Millisecond))
	l.Inherit(at(0), []spi.Usage{{Units: 7, Until: at(time.Second)}})
	assert.Equal(t, spi.Snapshot{Kind: "tokenbucket", Limit: 10, InUse: 7, Available: 3}, l.Snapshot(at(0)), "the units are consumed at once")
	take(t, l, at(0), 3)

	for _, p := range []struct {
		at   time.Duration
		want int64
	}{
		{100 * time.Millisecond, 1}, {300 * time.Millisecond, 3},
		{400 * time.Millisecond, 3}, {time.Second - 1, 3}, // capped at 10 - 7 until 1 s
		{time.Second, 4}, {1100 * time.Millisecond, 5}, // then normal refill from the cap
		{1600 * time.Millisecond, 10}, {time.Hour, 10},
	} {
		assert.Equal(t, p.want, tokens(l, at(p.at)), "tokens at %v", p.at)
	}

	d := l.TryAcquire(at(500*time.Millisecond), 4)
	assert.Equal(t, until(time.Second), d, "4 tokens only once the barrier is gone")
	requireExactHint(t, l, 4, d)
	assert.Equal(t, until(1200*time.Millisecond), l.TryAcquire(at(time.Second), 2))
}

func TestInheritSeveralBarriers(t *testing.T) {
	l := newBucket(t, continuous(10, 10, time.Second)) // 1 token per 100 ms
	l.Inherit(at(0), []spi.Usage{
		{Units: 2, Until: at(-time.Second)}, // expired: consumed only
		{Units: 3, Until: at(time.Second)},
		{Units: 4, Until: at(2 * time.Second)},
		{Units: 0, Until: at(time.Hour)}, // nothing
	})
	assert.Equal(t, int64(1), tokens(l, at(0)))
	assert.Equal(t, int64(3), tokens(l, at(500*time.Millisecond)), "capped at 10-3-4")
	assert.Equal(t, int64(3), tokens(l, at(time.Second-1)))
	assert.Equal(t, int64(6), tokens(l, at(1500*time.Millisecond)), "capped at 10-4 from 1 s")
	assert.Equal(t, int64(6), tokens(l, at(2*time.Second-1)))
	assert.Equal(t, int64(7), tokens(l, at(2100*time.Millisecond)))
	assert.Equal(t, int64(10), tokens(l, at(2400*time.Millisecond)))

	// The cap holds at every instant before Until, the last being
	// Until-1ns; refill goes on from there. With a continuous refill that
	// puts the 7th token 1 ns before 2.1 s.
	d := l.TryAcquire(at(0), 7)
	assert.Equal(t, until(2100*time.Millisecond-1), d)
	requireExactHint(t, l, 7, d)
}

func TestBarriersSurviveReconfigure(t *testing.T) {
	l := newBucket(t, discrete(10, 2, 100*time.Millisecond))
	l.Inherit(at(0), []spi.Usage{{Units: 7, Until: at(time.Second)}})
	update(t, l, at(0), discrete(20, 2, 100*time.Millisecond))
	assert.Equal(t, int64(3), tokens(l, at(0)), "raising the capacity does not refill")
	assert.Equal(t, int64(13), tokens(l, at(500*time.Millisecond)))
	assert.Equal(t, int64(13), tokens(l, at(time.Second-1)), "capped at 20 - 7 until 1 s")
	assert.Equal(t, int64(15), tokens(l, at(time.Second)))

	// A capacity lowered below the barrier: the bucket never holds more
	// than tokenLimit less the active barriers, here 5 - 7 = -2. Nobody is
	// admitted while the barrier holds more than the capacity, and the
	// bucket comes out of it in debt.
	update(t, l, at(0), discrete(5, 2, 100*time.Millisecond))
	assert.Equal(t, spi.Snapshot{Kind: "tokenbucket", Limit: 5, InUse: 7, Available: 0}, l.Snapshot(at(0)))
	assert.Equal(t, int64(-2), tokens(l, at(time.Second-1)))
	assert.Equal(t, int64(0), tokens(l, at(time.Second)))
	d := l.TryAcquire(at(0), 1)
	assert.Equal(t, until(1100*time.Millisecond), d)
	requireExactHint(t, l, 1, d)
}

func TestSealHandsOverInheritedBarriers(t *testing.T) {
	l := newBucket(t, discrete(10, 1, 100*time.Millisecond))
	l.Inherit(at(0), []spi.Usage{{Units: 7, Until: at(time.Second)}, {Units: 1, Until: at(-time.Second)}})
	take(t, l, at(0), 2)
	take(t, l, at(500*time.Millisecond), 2) // 3 (capped) - 2: 1 left

	usage := l.Seal(at(500 * time.Millisecond))
	// Debt 10 - 1 = 9: the barrier's 7 (listed on its own) and 2 of the
	// bucket's own, repaid by 1.6 s (3 by 0.7 s, capped until 1 s, then
	// +1 per 100 ms).
	require.Equal(t, []spi.Usage{
		{Units: 2, Until: at(1600 * time.Millisecond)},
		{Units: 7, Until: at(time.Second)},
	}, usage)
	var sum int64
	for _, u := range usage {
		sum += u.Units
	}
	assert.Equal(t, int64(10-1), sum, "the units add up to the debt: nothing counts twice")
}

func TestAlgorithmReplacement(t *testing.T) {
	// What the kernel does when a rule replaces the algorithm: seal the
	// old limiter, inherit into a fresh one built at the same instant.
	old := newBucket(t, discrete(10, 1, 100*time.Millisecond))
	take(t, old, at(0), 7)
	usage := old.Seal(at(0))
	require.Equal(t, []spi.Usage{{Units: 7, Until: at(700 * time.Millisecond)}}, usage)

	next := newBucket(t, continuous(10, 10, time.Second)) // a full new bucket...
	next.Inherit(at(0), usage)
	assert.Equal(t, int64(3), tokens(next, at(0)), "...less the old debt")
	take(t, next, at(0), 3)
	assert.Equal(t, int64(3), tokens(next, at(400*time.Millisecond)), "4 refilled by 0.4 s, but capped at 10-7 until 0.7 s")
	assert.Equal(t, int64(6), tokens(next, at(time.Second)))
}

func TestInheritNegativeUnitsPanics(t *testing.T) {
	l := newBucket(t, discrete(10, 1, time.Second))
	assert.Panics(t, func() { l.Inherit(at(0), []spi.Usage{{Units: -1, Until: at(time.Second)}}) })
	assert.Equal(t, int64(10), tokens(l, at(0)))
}

func TestDeepDebtIsNeverLooser(t *testing.T) {
	// A debt too deep for the 64-bit state (here 2^62 + 5 tokens in
	// discrete mode, about a million tokens in a continuous bucket whose
	// fixed point is 1/3.6e12 token) is folded into a synthetic barrier.
	// That is stricter than the exact bucket, never looser.
	tests := []struct {
		name  string
		opts  tokenbucket.Options
		units int64
	}{
		{"discrete", discrete(10, 1, time.Second), 1<<62 + 5},
		{"continuous", continuous(1000, 7, time.Hour), 1_000_000},
		{"continuous, huge", continuous(1000, 7, time.Hour), math.MaxInt64},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newBucket(t, tt.opts)
			usage := []spi.Usage{{Units: tt.units, Until: at(time.Second)}, {Units: tt.units, Until: at(time.Hour)}}
			l.Inherit(at(0), usage)
			m := newModel(tt.opts, t0)
			m.inherit(at(0), usage)

			for _, d := range []time.Duration{0, time.Second, time.Hour, 1000 * time.Hour, 200_000 * time.Hour} {
				s := l.Snapshot(at(d))
				ms := m.clone().snapshot(at(d))
				assert.GreaterOrEqual(t, s.InUse, min(ms.InUse, s.Limit), "debt at %v", d)
				assert.LessOrEqual(t, s.Available, ms.Available, "available at %v", d)
				got := l.TryAcquire(at(d), 1)
				assert.False(t, got.Granted)
				if got.Hint == spi.HintAt {
					exact, ok := m.clone().earliest(at(d), 1)
					if ok {
						assert.False(t, got.RetryAt.Before(exact), "hint never earlier than the exact bucket's")
					}
				}
			}
			// What it hands over keeps a successor of the same kind no
			// looser than the exact bucket either.
			next := newBucket(t, tt.opts)
			next.Inherit(at(0), l.Seal(at(0)))
			for _, d := range []time.Duration{0, time.Second, time.Hour, 1000 * time.Hour, 200_000 * time.Hour} {
				assert.LessOrEqual(t, next.Snapshot(at(d)).Available, m.clone().snapshot(at(d)).Available, "successor's available at %v", d)
			}
		})
	}
}
