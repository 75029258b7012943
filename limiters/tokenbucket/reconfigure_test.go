package tokenbucket_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/time/rate"

	"github.com/sluicerpc/sluice/limiters/tokenbucket"
	"github.com/sluicerpc/sluice/spi"
)

// update requires l.Update(when, o) to succeed.
func update(t testing.TB, l *tokenbucket.Limiter, when time.Time, o tokenbucket.Options) {
	t.Helper()
	require.NoError(t, l.Update(when, o))
	require.Equal(t, o, l.Options())
}

func TestRaisingTheCapacityNeverRefills(t *testing.T) {
	for _, o := range []tokenbucket.Options{discrete(10, 1, time.Second), continuous(10, 1, time.Second)} {
		t.Run(mode(o), func(t *testing.T) {
			l := newBucket(t, o)
			take(t, l, at(0), 7)
			o.TokenLimit = 20
			update(t, l, at(0), o)
			assert.Equal(t, spi.Snapshot{Kind: "tokenbucket", Limit: 20, InUse: 17, Available: 3}, l.Snapshot(at(0)), "3 left, not 13")
			assert.Equal(t, until(time.Second), l.TryAcquire(at(0), 4), "the fourth token is the next refill")
			assert.Equal(t, int64(4), tokens(l, at(time.Second)))
			assert.Equal(t, int64(20), tokens(l, at(time.Minute)), "refill fills the new capacity")
		})
	}
}

func TestLoweringTheCapacityCapsTheTokens(t *testing.T) {
	for _, o := range []tokenbucket.Options{discrete(20, 1, time.Second), continuous(20, 1, time.Second)} {
		t.Run(mode(o), func(t *testing.T) {
			l := newBucket(t, o)
			take(t, l, at(0), 8)
			o.TokenLimit = 5
			update(t, l, at(0), o)
			assert.Equal(t, spi.Snapshot{Kind: "tokenbucket", Limit: 5, InUse: 0, Available: 5}, l.Snapshot(at(0)), "12 left, capped at 5")
			take(t, l, at(0), 5)
			assert.Equal(t, until(time.Second), l.TryAcquire(at(0), 1))

			// Raising it back does not bring the 7 cut tokens back.
			o.TokenLimit = 20
			update(t, l, at(0), o)
			assert.Equal(t, int64(0), tokens(l, at(0)))
		})
	}
}

func TestTheOldParametersApplyUpToThePublication(t *testing.T) {
	// 5 tokens arrive at the 1 s boundary under the old parameters; the
	// lower capacity published at that instant caps them afterwards.
	l := newBucket(t, discrete(10, 5, time.Second))
	take(t, l, at(0), 10)
	update(t, l, at(time.Second), discrete(3, 5, time.Second))
	assert.Equal(t, int64(3), tokens(l, at(time.Second)))

	// Continuous: the 2.5 tokens accrued by 250 ms carry into the new rate.
	l = newBucket(t, continuous(10, 1, 100*time.Millisecond))
	take(t, l, at(0), 10)
	update(t, l, at(250*time.Millisecond), continuous(10, 1, time.Second))
	take(t, l, at(250*time.Millisecond), 2) // 0.5 left
	d := l.TryAcquire(at(250*time.Millisecond), 1)
	assert.Equal(t, until(750*time.Millisecond), d, "the half token left needs 0.5 s at 1/s")
	requireExactHint(t, l, 1, d)
}

func TestCadenceChangeGrantsNoExtraPeriod(t *testing.T) {
	tests := []struct {
		name      string
		publishAt time.Duration
		next      time.Duration // first refill under the new cadence
	}{
		// The docs example: 1 s -> 100 ms at 0.9 s; nothing at
		// publication, the first new replenishment at 1.0 s.
		{"at 0.9s", 900 * time.Millisecond, time.Second},
		// The interrupted period's progress is forfeited: the new
		// period starts at the publication, not at the old origin.
		{"at 0.95s", 950 * time.Millisecond, 1050 * time.Millisecond},
		{"at a boundary", 2 * time.Second, 2100 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newBucket(t, discrete(10, 1, time.Second))
			take(t, l, at(0), 10)
			if tt.publishAt >= time.Second {
				take(t, l, at(tt.publishAt), tokens(l, at(tt.publishAt)))
			}
			update(t, l, at(tt.publishAt), discrete(10, 1, 100*time.Millisecond))
			assert.Equal(t, int64(0), tokens(l, at(tt.publishAt)), "nothing at publication")
			d := l.TryAcquire(at(tt.publishAt), 1)
			assert.Equal(t, until(tt.next), d)
			requireExactHint(t, l, 1, d) // one period's tokens, exactly one new period later
			assert.Equal(t, int64(0), tokens(l, at(tt.next)))
			assert.Equal(t, int64(1), tokens(l, at(tt.next+100*time.Millisecond)))
		})
	}
}

func TestTokensPerPeriodChangeRestartsThePeriod(t *testing.T) {
	l := newBucket(t, discrete(10, 2, time.Second))
	take(t, l, at(0), 10)
	take(t, l, at(1500*time.Millisecond), 2) // the 1 s refill
	update(t, l, at(1500*time.Millisecond), discrete(10, 5, time.Second))
	assert.Equal(t, int64(0), tokens(l, at(1500*time.Millisecond)))
	assert.Equal(t, int64(0), tokens(l, at(2*time.Second)), "the old 2 s boundary is gone")
	d := l.TryAcquire(at(1500*time.Millisecond), 5)
	assert.Equal(t, until(2500*time.Millisecond), d)
	requireExactHint(t, l, 5, d)
}

func TestCapacityOrUnlimitedChangeKeepsThePhase(t *testing.T) {
	l := newBucket(t, discrete(10, 1, time.Second))
	take(t, l, at(0), 10)
	update(t, l, at(1500*time.Millisecond), discrete(20, 1, time.Second))
	assert.Equal(t, int64(1), tokens(l, at(1500*time.Millisecond)))
	assert.Equal(t, int64(2), tokens(l, at(2*time.Second)), "the 2 s boundary of the old origin stays")

	update(t, l, at(2500*time.Millisecond), unlimited(discrete(20, 1, time.Second)))
	update(t, l, at(2700*time.Millisecond), discrete(20, 1, time.Second))
	assert.Equal(t, int64(3), tokens(l, at(3*time.Second)))
}

func TestModeChangeIsACadenceChange(t *testing.T) {
	l := newBucket(t, discrete(10, 10, time.Second))
	take(t, l, at(0), 10)
	update(t, l, at(900*time.Millisecond), continuous(10, 10, time.Second))
	assert.Equal(t, int64(0), tokens(l, at(900*time.Millisecond)), "no discrete refill granted at publication")
	assert.Equal(t, int64(1), tokens(l, at(time.Second)), "continuous refill from the publication on")

	// Continuous -> discrete drops a fraction the discrete bucket cannot
	// hold (too strict by less than a token, never looser).
	l = newBucket(t, continuous(10, 3, time.Second))
	take(t, l, at(0), 10)
	update(t, l, at(500*time.Millisecond), discrete(10, 3, time.Second)) // 1.5 tokens
	assert.Equal(t, int64(1), tokens(l, at(500*time.Millisecond)))
	update(t, l, at(500*time.Millisecond), continuous(10, 3, time.Second))
	assert.Equal(t, until(500*time.Millisecond+333333334), l.TryAcquire(at(500*time.Millisecond), 2), "the half token is gone")
}

func TestRepeatedCadenceChangesAreNeverLooser(t *testing.T) {
	// Publishing a new period every 0.9 s restarts the period each time:
	// the bucket never refills. Too strict is acceptable; a free period
	// at each publication would not be.
	l := newBucket(t, discrete(10, 1, time.Second))
	take(t, l, at(0), 10)
	for i := range 10 {
		p := time.Second
		if i%2 == 0 {
			p = 999 * time.Millisecond
		}
		when := at(time.Duration(i+1) * 900 * time.Millisecond)
		update(t, l, when, discrete(10, 1, p))
		require.Equal(t, int64(0), tokens(l, when))
	}
}

func TestUnlimitedToLimitedStartsFromWhatTheTrafficLeft(t *testing.T) {
	const grants = 1000
	limited := discrete(10, 1, 100*time.Millisecond) // 10 per second, burst 10
	l := newBucket(t, unlimited(limited))
	for i := range grants {
		take(t, l, at(time.Duration(i)*time.Millisecond), 1)
	}
	update(t, l, at(time.Second), limited)
	// The bucket kept counting: 1000 grants in 1 s drained it; only the
	// refill at the 1 s boundary is there.
	assert.Equal(t, int64(1), tokens(l, at(time.Second)))
	take(t, l, at(time.Second), 1)
	assert.Equal(t, until(1100*time.Millisecond), l.TryAcquire(at(time.Second), 1))

	// x/time/rate: Inf -> finite hands out a full burst. While the limit
	// is Inf, AllowN returns before touching the bucket, so the burst it
	// was configured with is still there afterwards.
	x := rate.NewLimiter(rate.Inf, 10)
	for i := range grants {
		require.True(t, x.AllowN(at(time.Duration(i)*time.Millisecond), 1))
	}
	x.SetLimitAt(at(time.Second), rate.Every(100*time.Millisecond))
	assert.True(t, x.AllowN(at(time.Second), 10), "x/time/rate: a full burst of 10 right after 1000 grants")

	// Starting from NewLimiter(rate.Inf, 0) and setting the burst when
	// switching happens not to burst in v0.15.0 (the bucket held 0 while
	// the burst was 0), but only because nothing was counted either: the
	// limiter has no notion of the 1000 grants.
	x = rate.NewLimiter(rate.Inf, 0)
	for i := range grants {
		require.True(t, x.AllowN(at(time.Duration(i)*time.Millisecond), 1))
	}
	x.SetLimitAt(at(time.Second), rate.Every(100*time.Millisecond))
	x.SetBurstAt(at(time.Second), 10)
	assert.False(t, x.AllowN(at(time.Second), 1))
}

func TestSameOptionsChangeNothing(t *testing.T) {
	l := newBucket(t, discrete(10, 1, time.Second))
	take(t, l, at(0), 10)
	update(t, l, at(900*time.Millisecond), discrete(10, 1, time.Second))
	assert.Equal(t, int64(1), tokens(l, at(time.Second)), "not a cadence change: the phase is kept")
}

func TestInvalidReconfigureChangesNothing(t *testing.T) {
	valid := spi.Params{"tokenLimit": 10, "tokensPerPeriod": 1, "period": int64(time.Second)}
	with := func(name string, v int64) spi.Params {
		p := valid.Clone()
		p[name] = v
		return p
	}
	tests := []struct {
		name      string
		params    spi.Params
		wantParam string
	}{
		{"nil", nil, "period"},
		{"unknown", with("burst", 3), "burst"},
		{"zero limit", with("tokenLimit", 0), "tokenLimit"},
		{"limit too large", with("tokenLimit", tokenbucket.MaxTokenLimit+1), "tokenLimit"},
		{"zero refill", with("tokensPerPeriod", 0), "tokensPerPeriod"},
		{"short period", with("period", 999), "period"},
		{"bad flag", with("continuous", 2), "continuous"},
		{"inexpressible continuous rate", spi.Params{"tokenLimit": tokenbucket.MaxTokenLimit, "tokensPerPeriod": 3, "period": int64(time.Second), "continuous": 1}, "period"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newBucket(t, continuous(10, 1, time.Second))
			take(t, l, at(0), 7)
			before := l.Snapshot(at(500 * time.Millisecond))

			err := l.Reconfigure(at(500*time.Millisecond), tt.params)
			var pe *spi.ParamError
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, tt.wantParam, pe.Param)

			assert.Equal(t, continuous(10, 1, time.Second), l.Options())
			assert.Equal(t, before, l.Snapshot(at(500*time.Millisecond)))
			assert.Equal(t, until(time.Second), l.TryAcquire(at(500*time.Millisecond), 4), "the old cadence and phase")
			assert.ErrorAs(t, l.Update(at(500*time.Millisecond), discrete(0, 1, time.Second)), &pe)
			assert.Equal(t, continuous(10, 1, time.Second), l.Options())
		})
	}
}

func TestReconfigureDoesNotRetainParams(t *testing.T) {
	l := newBucket(t, discrete(10, 1, time.Second))
	p := tokenbucket.Spec(5, 1, time.Second).Params
	require.NoError(t, l.Reconfigure(at(0), p))
	p["tokenLimit"] = 1
	assert.Equal(t, int64(5), l.Options().TokenLimit)
}

func mode(o tokenbucket.Options) string {
	if o.Continuous {
		return "continuous"
	}
	return "discrete"
}

// TestReconfigureToTheSameOptionsStillBoundsLateCallers is the conformance
// seed 13632104612828948399 made deterministic. The bucket has been full
// since 100ms; at 200ms a Reconfigure to the options in force publishes
// its 3 tokens. A caller that read the clock just before 200ms then takes
// one: if the equal Reconfigure changed nothing, that caller takes from the
// bucket as it was before the 200ms refill, the refill then lifts it back
// to the cap, and 4 tokens go out at 200ms from a publication that carried
// 3. A publication is an instant no late caller crosses, whatever it
// changes.
func TestReconfigureToTheSameOptionsStillBoundsLateCallers(t *testing.T) {
	o := discrete(3, 2, 100*time.Millisecond)
	l := newBucket(t, o)
	require.EqualValues(t, 3, tokens(l, at(200*time.Millisecond)))
	require.NoError(t, l.Update(at(200*time.Millisecond), o))
	take(t, l, at(200*time.Millisecond-1), 1) // the late caller
	require.EqualValues(t, 2, tokens(l, at(200*time.Millisecond)),
		"a late grant is counted against what the publication carried")
	require.Equal(t, o, l.Options())
	// The phase is kept: the next refill is at 300ms.
	require.EqualValues(t, 2, tokens(l, at(300*time.Millisecond-1)))
	require.EqualValues(t, 3, tokens(l, at(300*time.Millisecond)))
}
