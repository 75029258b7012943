package kernel_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/kernel"
	"github.com/sluicerpc/sluice/limiters/tokenbucket"
	"github.com/sluicerpc/sluice/limiters/window"
	"github.com/sluicerpc/sluice/spi"
)

// The randomized stress test extended with rate and partition changes:
// workers in eight tenants while an updater cycles the global rate through
// token bucket parameter changes, algorithm replacements (fixed and
// sliding windows) and Disable, and the partition layer through selector
// replacements, MaxPartitions shrink and grow and per-partition limit
// changes. Checked: no partition's holder count ever exceeds the bound of
// a program live during the grant, the total rate grants never exceed what
// the configurations allow (a reset of rate state on any of the hundreds
// of updates would exceed it many times over), and every counter returns
// to zero.
func TestStressRateAndPartitionUpdates(t *testing.T) {
	const (
		workers   = 8
		cycles    = 10
		maxBurst  = 20  // the largest tokenLimit, and the largest window limit
		maxRate   = 400 // per second, the fastest refill of any step
		partLimit = 3   // the largest per-partition concurrency limit
	)
	type step struct {
		rate     spi.Spec // zero: disabled
		maxParts int
		partConc int64
		newSel   bool
	}
	steps := []step{
		{tokenbucket.Spec(10, 2, 10*time.Millisecond), 8, 3, true},
		{tokenbucket.Spec(20, 2, 10*time.Millisecond), 8, 1, false},
		{tokenbucket.ContinuousSpec(20, 4, 10*time.Millisecond), 2, 2, false},
		{window.SlidingSpec(20, 50*time.Millisecond, 5), 8, 3, true},
		{window.SlidingSpec(10, 50*time.Millisecond, 5), 4, 3, false},
		{window.FixedSpec(10, 50*time.Millisecond), 8, 2, false},
		{tokenbucket.Spec(10, 1, 10*time.Millisecond), 8, 3, true},
		{spi.Spec{}, 0, 0, false},
	}

	f := newFixture(t)
	f.k.SetHooks(nil)
	type genInfo struct {
		version  uint64
		partConc int64
	}
	var (
		logMu sync.Mutex
		log   = map[uint64]genInfo{}
	)
	bound := func(lo, hi uint64) int64 { // the partition bound over [lo-1, hi+1]
		logMu.Lock()
		defer logMu.Unlock()
		var m int64
		for g := lo - min(lo, 1); g <= hi+1; g++ {
			m = max(m, log[g].partConc)
		}
		return m
	}

	var (
		holders    sync.Map // "version/key" -> *atomic.Int64
		violations atomic.Int64
		rateGrants atomic.Int64
		ops        atomic.Int64
		first      atomic.Value
	)
	counter := func(k string) *atomic.Int64 {
		v, _ := holders.LoadOrStore(k, new(atomic.Int64))
		return v.(*atomic.Int64)
	}

	stop := make(chan struct{})
	var updater sync.WaitGroup
	var enabledIntervals int
	start := time.Now()
	updater.Go(func() {
		defer close(stop)
		version := uint64(0)
		enabled := false
		for i := range cycles * len(steps) {
			for s := ops.Load(); ops.Load()-s < 300; {
				runtime.Gosched()
			}
			s := steps[i%len(steps)]
			next := f.k.Generation() + 1
			if s.rate.Kind == "" {
				if enabled {
					logMu.Lock()
					log[next] = genInfo{}
					logMu.Unlock()
					_, err := f.k.Disable()
					require.NoError(t, err)
					enabled = false
				}
				continue
			}
			if s.newSel {
				version++
			}
			o := kernel.Options{
				Global: kernel.Rule{Limits: []spi.Spec{s.rate}},
				Partition: &kernel.PartitionPolicy{
					Selector: byTenant(version), MaxPartitions: s.maxParts, IdleTimeout: time.Millisecond,
					Rule: conc(s.partConc),
				},
			}
			logMu.Lock()
			log[next] = genInfo{version: version, partConc: s.partConc}
			logMu.Unlock()
			var err error
			if enabled {
				_, err = f.k.Update(next-1, o)
			} else {
				_, err = f.k.Enable(o)
				enabledIntervals++
			}
			require.NoError(t, err)
			enabled = true
		}
	})

	var work sync.WaitGroup
	for w := range workers {
		work.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 11))
			var p kernel.Permit
			for {
				select {
				case <-stop:
					return
				default:
				}
				ops.Add(1)
				tenant := fmt.Sprint("t", rng.IntN(8))
				e0 := f.k.Generation()
				if !f.k.Capture(&p) {
					continue
				}
				if err := p.Admit(context.Background(), kernel.Request{Method: f.say, Metadata: md{"tenant": tenant}}); err != nil {
					p.Release()
					runtime.Gosched()
					continue
				}
				rateGrants.Add(1)
				gen := p.Generation()
				logMu.Lock()
				info := log[gen]
				logMu.Unlock()
				c := counter(fmt.Sprint(info.version, "/", tenant))
				h := c.Add(1)
				if b := bound(min(e0, gen), f.k.Generation()); h > b {
					violations.Add(1)
					first.CompareAndSwap(nil, fmt.Sprintf("partition %s: %d holders, bound %d", tenant, h, b))
				}
				runtime.Gosched()
				c.Add(-1)
				p.Release()
			}
		})
	}
	updater.Wait()
	work.Wait()
	elapsed := time.Since(start)

	require.Zero(t, violations.Load(), "first: %v", first.Load())
	// Every enabled interval may start with a full bucket (a fresh
	// lineage after a drained Disable) and a fixed window may admit twice
	// its limit across a boundary; beyond that, only refill.
	allowed := int64(enabledIntervals)*2*maxBurst + int64(elapsed.Seconds()*maxRate) + maxBurst
	require.LessOrEqual(t, rateGrants.Load(), allowed, "rate grants over %v across %d intervals", elapsed, enabledIntervals)
	require.Positive(t, rateGrants.Load())
	t.Logf("generations=%d rate grants=%d allowed=%d elapsed=%v", f.k.Generation(), rateGrants.Load(), allowed, elapsed)

	f.k.Seal()
	require.NoError(t, f.k.Drain(context.Background()))
	st := f.k.Stats()
	require.Zero(t, st.LivePrograms)
	require.Zero(t, st.States)
	require.Empty(t, st.Partitions)
	require.Zero(t, st.QueuedCalls)
	require.Zero(t, st.DoubleReleases)
	holders.Range(func(k, v any) bool {
		require.Zero(t, v.(*atomic.Int64).Load(), k)
		return true
	})
}
