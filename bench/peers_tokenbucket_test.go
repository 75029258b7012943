package bench

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/kernel"
	"github.com/sluicerpc/sluice/limiters/tokenbucket"
	"github.com/sluicerpc/sluice/spi"
)

// Our token bucket beside x/time/rate's Allow, in the same BenchmarkPeers
// run. Allow reads the clock itself; so does each subject here, once per
// op, as the kernel does for a request whose route has a rate limit.
//
//   - sluice-tokenbucket: a request through the kernel (Capture, Admit,
//     Release) whose only scope is a Global continuous token bucket.
//   - tokenbucket-limiter: the limiter alone, TryAcquire(clock.Now(), 1).
func init() {
	moreChecks["sluice-tokenbucket"] = checkSluiceBucket
	moreChecks["tokenbucket-limiter"] = checkBucketLimiter
	peers = append(peers,
		peer{"sluice-tokenbucket", func(b *testing.B) { benchSluiceBucket(b, false) }, func(b *testing.B) { benchSluiceBucket(b, true) }},
		peer{"tokenbucket-limiter", func(b *testing.B) { benchBucketLimiter(b, false) }, func(b *testing.B) { benchBucketLimiter(b, true) }},
	)
}

// ampleBucket holds and refills a billion tokens per second: never
// refused, with a one-second refill horizon (see the tokenbucket package
// doc on out-of-order times).
var ampleBucket = tokenbucket.ContinuousSpec(1<<30, 1<<30, time.Second)

func newSluiceBucket(tb testing.TB, spec spi.Spec) (*kernel.Kernel, kernel.Request) {
	tb.Helper()
	var cb kernel.CatalogBuilder
	m := cb.MustAdd("bench", "Op")
	k, err := kernel.New(kernel.Config{Catalog: cb.Build()})
	require.NoError(tb, err)
	_, err = k.Enable(kernel.Options{Global: kernel.Rule{Limits: []spi.Spec{spec}}})
	require.NoError(tb, err)
	return k, kernel.Request{Method: m}
}

func benchSluiceBucket(b *testing.B, parallel bool) {
	k, req := newSluiceBucket(b, ampleBucket)
	ctx := context.Background()
	b.ReportAllocs()
	op := func(p *kernel.Permit) {
		k.Capture(p)
		if err := p.Admit(ctx, req); err != nil {
			panic(err)
		}
		p.Release()
	}
	if !parallel {
		var p kernel.Permit
		for b.Loop() {
			op(&p)
		}
		return
	}
	b.RunParallel(func(pb *testing.PB) {
		var p kernel.Permit
		for pb.Next() {
			op(&p)
		}
	})
}

func benchBucketLimiter(b *testing.B, parallel bool) {
	l, err := tokenbucket.Kind{}.New(ampleBucket.Params, time.Now())
	require.NoError(b, err)
	clock := spi.NewMonotonicClock()
	b.ReportAllocs()
	if !parallel {
		for b.Loop() {
			if !l.TryAcquire(clock.Now(), 1).Granted {
				b.Fatal("refused")
			}
		}
		return
	}
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if !l.TryAcquire(clock.Now(), 1).Granted {
				panic("refused")
			}
		}
	})
}

// moreChecks are the TestPeersAdmit sanity checks of subjects defined
// outside peers_test.go.
var moreChecks = map[string]func(*testing.T){}

// oneToken is a bucket with one token and no refill worth speaking of.
var oneToken = tokenbucket.Spec(1, 1, time.Hour)

// checkSluiceBucket: through the kernel, the second request is refused.
func checkSluiceBucket(t *testing.T) {
	k, req := newSluiceBucket(t, oneToken)
	var p kernel.Permit
	require.True(t, k.Capture(&p))
	require.NoError(t, p.Admit(context.Background(), req))
	p.Release()
	require.True(t, k.Capture(&p))
	reason, _ := kernel.ReasonOf(p.Admit(context.Background(), req))
	require.Equal(t, kernel.ReasonRate, reason)
}

// checkBucketLimiter: the limiter alone refuses the second token.
func checkBucketLimiter(t *testing.T) {
	l, err := tokenbucket.Kind{}.New(oneToken.Params, time.Now())
	require.NoError(t, err)
	now := time.Now()
	require.True(t, l.TryAcquire(now, 1).Granted)
	require.False(t, l.TryAcquire(now, 1).Granted)
}
