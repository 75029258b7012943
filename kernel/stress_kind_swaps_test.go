package kernel_test

import (
	"context"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/kernel"
	"github.com/sluicerpc/sluice/limiters/concurrency"
	"github.com/sluicerpc/sluice/spi"
)

// stressGrants is how many grants a storm makes: $SLUICE_STRESS_GRANTS
// (make stress sets millions), else short, the figure make test runs.
func stressGrants(t *testing.T, short int64) int64 {
	t.Helper()
	v := os.Getenv("SLUICE_STRESS_GRANTS")
	if v == "" {
		return short
	}
	n, err := strconv.ParseInt(v, 10, 64)
	require.NoError(t, err, "SLUICE_STRESS_GRANTS")
	require.Positive(t, n, "SLUICE_STRESS_GRANTS")
	return n
}

// TestStressKindSwapsAtEveryScope: the concurrency kind of the global
// scope, a service, a method and the partition rule switches between the
// built-in limiter and a third party's, one scope's bit at a time, as fast
// as the updater can publish, while workers hold grants and queue. Every
// limit stays 4, so the invariant is exact at every instant: at most 4
// holders per scope and per partition key, whichever state (old or new
// kind) each holder's unit is on. Each worker counts its grant in a ledger
// per scope after Admit returns and uncounts it before Release, so a
// ledger is never above the real holders. (Before the successor was born
// owing everything, such storms counted hundreds of holders over the
// limit per 4 million grants: issue 24 section 1.)
func TestStressKindSwapsAtEveryScope(t *testing.T) {
	const (
		workers = 8
		limit   = 4
		tenants = 3
	)
	target := stressGrants(t, 60_000)
	reg := &spi.Registry{}
	reg.MustRegister(concurrency.Kind{})
	reg.MustRegister(lockedConcKind{})
	var b kernel.CatalogBuilder
	say := b.MustAdd("echo", "Say")
	shout := b.MustAdd("echo", "Shout")
	ping := b.MustAdd("other", "Ping")
	k, err := kernel.New(kernel.Config{Catalog: b.Build(), Registry: reg})
	require.NoError(t, err)

	kind := func(i, bit int) spi.Spec {
		if i>>bit&1 == 1 {
			return lockedSpec(limit)
		}
		return concurrency.Spec(limit)
	}
	rule := func(s spi.Spec) kernel.Rule { return kernel.Rule{Limits: []spi.Spec{s}} }
	selector := kernel.Selector{Name: "identity", Version: 1, Key: func(f kernel.Facts) (string, bool) { return f.Identity, true }}
	opts := func(i int) kernel.Options {
		return kernel.Options{
			Global:   rule(kind(i, 0)),
			Services: map[string]kernel.Rule{"echo": rule(kind(i, 1))},
			Methods:  map[string]kernel.Rule{echoSay: rule(kind(i, 2))},
			Partition: &kernel.PartitionPolicy{
				Selector: selector, MaxPartitions: 16, IdleTimeout: time.Minute,
				Rule: rule(kind(i, 3)),
			},
			Queue: kernel.QueuePolicy{MaxQueuedCalls: 16, MaxQueuedBytes: 1 << 20, MaxQueueDelay: 5 * time.Millisecond},
		}
	}

	type ledger struct{ global, service, method atomic.Int64 }
	var (
		held    ledger
		tenant  [tenants]atomic.Int64
		grants  atomic.Int64
		swaps   atomic.Int64
		bad     violations
		stop    = make(chan struct{})
		updater sync.WaitGroup
	)
	_, err = k.Enable(opts(0))
	require.NoError(t, err)
	updater.Go(func() {
		defer close(stop)
		for i := 1; grants.Load() < target; i++ {
			// Gray code: one scope's kind changes per publication.
			if _, err := k.Update(k.Generation(), opts(i^(i>>1))); err != nil {
				bad.fail("update %d: %v", i, err)
				return
			}
			swaps.Add(1)
			runtime.Gosched()
		}
	})

	ids := [tenants]string{"t0", "t1", "t2"}
	var work sync.WaitGroup
	for w := range workers {
		work.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 24))
			var p kernel.Permit
			for {
				select {
				case <-stop:
					return
				default:
				}
				m, tn := say, rng.IntN(tenants)
				switch rng.IntN(4) {
				case 0:
					m = shout
				case 1:
					m = ping
				}
				if !k.Capture(&p) {
					continue
				}
				if err := p.Admit(context.Background(), kernel.Request{Method: m, Identity: ids[tn]}); err != nil {
					continue
				}
				grants.Add(1)
				check := func(c *atomic.Int64, what string) {
					if n := c.Add(1); n > limit {
						bad.fail("%d holders of %s, limit %d", n, what, limit)
					}
				}
				check(&held.global, "the global scope")
				check(&tenant[tn], ids[tn])
				if m != ping {
					check(&held.service, "service echo")
				}
				if m == say {
					check(&held.method, "echo/Say")
				}
				for range rng.IntN(3) {
					runtime.Gosched()
				}
				if m == say {
					held.method.Add(-1)
				}
				if m != ping {
					held.service.Add(-1)
				}
				tenant[tn].Add(-1)
				held.global.Add(-1)
				p.Release()
			}
		})
	}
	updater.Wait()
	work.Wait()
	bad.requireNone(t)

	_, err = k.Disable()
	require.NoError(t, err)
	st := k.Stats()
	require.Zero(t, st.LivePrograms)
	require.Zero(t, st.QueuedCalls)
	require.Zero(t, st.DoubleReleases)
	t.Logf("%d grants, %d kind swaps, 0 over the limit", grants.Load(), swaps.Load())
}
