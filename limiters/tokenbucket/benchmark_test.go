package tokenbucket_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/time/rate"

	"github.com/sluicerpc/sluice/limiters/tokenbucket"
	"github.com/sluicerpc/sluice/spi"
)

var (
	decisionSink spi.Decision
	boolSink     bool
)

// ample is a bucket that never runs dry within a benchmark: 2^31-1 tokens.
var ample = tokenbucket.Options{TokenLimit: tokenbucket.MaxTokenLimit, TokensPerPeriod: tokenbucket.MaxTokenLimit, Period: time.Second}

// BenchmarkTokenBucket compares the immediate path with x/time/rate in the
// same run:
//
//   - permit: a grant from an ample bucket at a precomputed instant (the
//     kernel reads the clock once per request and passes it down);
//   - permit-timenow: the same, reading time.Now() per call, as Allow does;
//   - reject: a refusal with its exact retry time;
//   - permit-parallel: grants from every P on one bucket;
//   - xtimerate-allow: rate.Limiter.Allow() (reads time.Now() per call);
//   - xtimerate-allown: rate.Limiter.AllowN(now, 1) with a precomputed now.
func BenchmarkTokenBucket(b *testing.B) {
	now := time.Now()
	b.Run("permit", func(b *testing.B) {
		l := newBucketAt(b, ample, now)
		b.ReportAllocs()
		for b.Loop() {
			decisionSink = l.TryAcquire(now, 1)
		}
		if !decisionSink.Granted {
			b.Fatal("refused")
		}
	})
	b.Run("permit-timenow", func(b *testing.B) {
		l := newBucketAt(b, ample, now)
		b.ReportAllocs()
		for b.Loop() {
			decisionSink = l.TryAcquire(time.Now(), 1)
		}
		if !decisionSink.Granted {
			b.Fatal("refused")
		}
	})
	b.Run("reject", func(b *testing.B) {
		l := newBucketAt(b, tokenbucket.Options{TokenLimit: 1, TokensPerPeriod: 1, Period: time.Hour}, now)
		require.True(b, l.TryAcquire(now, 1).Granted)
		b.ReportAllocs()
		for b.Loop() {
			decisionSink = l.TryAcquire(now, 1)
		}
		if decisionSink.Hint != spi.HintAt {
			b.Fatalf("want a refusal with a retry time, got %+v", decisionSink)
		}
	})
	b.Run("permit-parallel", func(b *testing.B) {
		l := newBucketAt(b, ample, now)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if !l.TryAcquire(now, 1).Granted {
					b.Error("refused")
					return
				}
			}
		})
	})
	b.Run("xtimerate-allow", func(b *testing.B) {
		x := rate.NewLimiter(rate.Every(time.Nanosecond), tokenbucket.MaxTokenLimit)
		b.ReportAllocs()
		for b.Loop() {
			boolSink = x.Allow()
		}
		if !boolSink {
			b.Fatal("refused")
		}
	})
	b.Run("xtimerate-allown", func(b *testing.B) {
		x := rate.NewLimiter(rate.Every(time.Nanosecond), tokenbucket.MaxTokenLimit)
		b.ReportAllocs()
		for b.Loop() {
			boolSink = x.AllowN(now, 1)
		}
		if !boolSink {
			b.Fatal("refused")
		}
	})
}

func newBucketAt(tb testing.TB, o tokenbucket.Options, now time.Time) *tokenbucket.Limiter {
	tb.Helper()
	l, err := tokenbucket.New(o, now)
	require.NoError(tb, err)
	return l
}

func TestHotPathAllocatesNothing(t *testing.T) {
	now := time.Now()
	withBarrier := newBucketAt(t, discrete(10, 1, time.Hour), now)
	withBarrier.Inherit(now, []spi.Usage{{Units: 3, Until: now.Add(time.Minute)}, {Units: 2, Until: now.Add(time.Hour)}})
	limiters := map[string]*tokenbucket.Limiter{
		"discrete":     newBucketAt(t, discrete(10, 1, time.Hour), now),
		"continuous":   newBucketAt(t, continuous(10, 3, time.Hour), now),
		"unlimited":    newBucketAt(t, unlimited(discrete(10, 1, time.Hour)), now),
		"with barrier": withBarrier,
	}
	for name, l := range limiters {
		var viaSPI spi.Limiter = l
		tests := []struct {
			name string
			f    func()
		}{
			{"grant+cancel", func() {
				decisionSink = l.TryAcquire(now, 1)
				l.Cancel(now, 1)
			}},
			{"grant+cancel via spi.Limiter", func() {
				decisionSink = viaSPI.TryAcquire(now, 1)
				viaSPI.Cancel(now, 1)
			}},
			{"refusal with a retry time", func() { decisionSink = l.TryAcquire(now, 10) }},
			{"refusal: never", func() { decisionSink = l.TryAcquire(now, 11) }},
			{"snapshot", func() { _ = viaSPI.Snapshot(now.Add(2 * time.Hour)) }},
			{"release", func() { viaSPI.Release(now, 1) }},
		}
		for _, tt := range tests {
			t.Run(name+"/"+tt.name, func(t *testing.T) {
				if name == "discrete" || name == "continuous" {
					decisionSink = l.TryAcquire(now, 5) // not full, so refusals are real
				}
				require.Zero(t, testing.AllocsPerRun(1000, tt.f), "allocations per run")
			})
		}
	}
}
