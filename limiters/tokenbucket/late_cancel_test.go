package tokenbucket_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/sluicerpc/sluice/limiters/tokenbucket"
)

// A late Cancel (spi.Limiter.Cancel with the grant's instant, after calls
// at later instants: the kernel's ReleaseUnused) gives back only what the
// grant's absence would have left.

func TestLateCancelAfterTheBucketWasFullGivesNothing(t *testing.T) {
	l := newBucket(t, discrete(3, 3, time.Second))
	take(t, l, at(0), 1)           // the request refused later
	take(t, l, at(time.Second), 3) // refilled to the cap at 1s: the absent grant's token was lost there
	l.Cancel(at(0), 1)             // refused after admission
	require.Zero(t, tokens(l, at(time.Second)), "the bucket lends a token its absence never had")
}

func TestLateCancelBelowTheCapGivesBack(t *testing.T) {
	l := newBucket(t, continuous(10, 10, time.Second))
	take(t, l, at(0), 5)
	take(t, l, at(0), 1)                    // the request refused later
	take(t, l, at(100*time.Millisecond), 2) // the bucket held 5 then: far from its cap
	l.Cancel(at(0), 1)
	require.EqualValues(t, 4, tokens(l, at(100*time.Millisecond)), "3 + the token given back")
}

func TestLateCancelWithinAGrantOfTheCapGivesNothing(t *testing.T) {
	l := newBucket(t, discrete(10, 1, time.Second))
	take(t, l, at(0), 1) // 9 left: the request refused later
	// 10 at 1s without the grant: the cap; with it, 10 too (9+1), so a
	// write there is within one token of the cap.
	take(t, l, at(time.Second), 4)
	l.Cancel(at(0), 1)
	require.EqualValues(t, 6, tokens(l, at(time.Second)))
}

func TestLateCancelOfAGrantBeforeAPublicationGivesNothing(t *testing.T) {
	l := newBucket(t, discrete(10, 1, time.Second))
	take(t, l, at(0), 5)
	require.NoError(t, l.Update(at(time.Millisecond), discrete(8, 1, time.Second)))
	l.Cancel(at(0), 5)
	require.EqualValues(t, 5, tokens(l, at(time.Millisecond)))
}

// TestLateCancelNeverLoosens drives a bucket L and its twin M, which never
// took one grant of L, through random calls; then L gives that grant back
// late. From then on L must never grant more than M. When every grant took
// one token and the bucket stayed more than a token below its cap since
// the grant, the give-back must be exact: L holds what M holds.
func TestLateCancelNeverLoosens(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		o := tokenbucket.Options{
			TokenLimit:      rapid.Int64Range(1, 8).Draw(t, "tokenLimit"),
			TokensPerPeriod: rapid.Int64Range(1, 4).Draw(t, "tokensPerPeriod"),
			Period:          rapid.SampledFrom([]time.Duration{time.Millisecond, 7 * time.Millisecond, 100 * time.Millisecond}).Draw(t, "period"),
			Continuous:      rapid.Bool().Draw(t, "continuous"),
		}
		newL := func() *tokenbucket.Limiter {
			l, err := tokenbucket.New(o, t0)
			if err != nil {
				t.Fatal(err)
			}
			return l
		}
		l, m := newL(), newL()
		now := t0
		ones := true     // every grant took one token
		nearCap := false // L came within a token of its cap after the grant
		updated := false // a publication came after the grant
		level := func() int64 { return tokens(l, now) }
		advance := func(label string) {
			now = now.Add(time.Duration(rapid.Int64Range(0, 3*int64(o.Period)).Draw(t, label)))
		}
		both := func(label string) {
			n := rapid.Int64Range(1, o.TokenLimit).Draw(t, label)
			ones = ones && n == 1
			dl := l.TryAcquire(now, n)
			if dl.Granted {
				if !m.TryAcquire(now, n).Granted {
					t.Fatalf("the twin, which holds more, refused %d at %v", n, now.Sub(t0))
				}
			}
		}

		for range rapid.IntRange(0, 6).Draw(t, "prefix") {
			advance("prefix advance")
			both("prefix acquire")
		}
		t1 := now
		g := rapid.Int64Range(1, o.TokenLimit).Draw(t, "g")
		if !l.TryAcquire(t1, g).Granted {
			t.Skip("nothing to give back")
		}
		ones = ones && g == 1
		for range rapid.IntRange(0, 8).Draw(t, "middle") {
			switch rapid.IntRange(0, 3).Draw(t, "op") {
			case 0:
				advance("middle advance")
			case 1, 2:
				nearCap = nearCap || level() >= o.TokenLimit-1
				both("middle acquire")
			case 3:
				next := o
				next.TokenLimit = rapid.Int64Range(1, 8).Draw(t, "update")
				if err := l.Update(now, next); err != nil {
					t.Fatal(err)
				}
				if err := m.Update(now, next); err != nil {
					t.Fatal(err)
				}
				o, updated = next, true
			}
		}
		nearCap = nearCap || level() >= o.TokenLimit-1
		l.Cancel(t1, g)
		if ones && !nearCap && !updated {
			if got, want := l.Snapshot(now), m.Snapshot(now); got != want {
				t.Fatalf("the late give-back was lost: L %+v, twin %+v", got, want)
			}
		}
		var fromL, fromM int64
		for range 4 {
			for l.TryAcquire(now, 1).Granted {
				fromL++
			}
			for m.TryAcquire(now, 1).Granted {
				fromM++
			}
			if fromL > fromM {
				t.Fatalf("after Cancel(%v, %d) at %v, L granted %d, its twin %d", t1.Sub(t0), g, now.Sub(t0), fromL, fromM)
			}
			advance("drain advance")
		}
	})
}
