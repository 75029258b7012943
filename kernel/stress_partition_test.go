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

// The randomized stress test of the partition layer's lifecycle: workers
// in four tenants, some queueing on per-partition rate limits, while an
// updater takes random steps: the partition concurrency rule removed and
// re-added, the partition layer removed and re-added, the selector
// identity changed and changed back (A -> B -> A), the per-partition rate
// algorithm replaced, Disable and Enable; and Seal at a random instant.
//
// The per-partition concurrency limit is always 1 when present, so the
// invariant is exact and independent of timing: at no instant do two
// requests hold a unit of the same key's concurrency state in the same
// namespace identity (a split budget is two such units). After Seal no
// request is queued and none that starts admitting is granted.
func TestStressPartitionLifecycle(t *testing.T) {
	for round := range 6 {
		t.Run(fmt.Sprint("round", round), func(t *testing.T) { stressPartitionRound(t, uint64(round)) })
	}
}

func stressPartitionRound(t *testing.T, seed uint64) {
	const (
		workers = 6
		steps   = 40
		tenants = 4
	)
	rng := rand.New(rand.NewPCG(seed, 77))
	sealAt := 10 + rng.IntN(steps-10)
	f := newFixture(t)
	f.k.SetHooks(nil)
	queue := kernel.QueuePolicy{MaxQueuedCalls: 32, MaxQueuedBytes: 1 << 20, MaxQueueDelay: time.Second}
	rates := []spi.Spec{tokenbucket.Spec(2, 1, 10*time.Millisecond), window.FixedSpec(2, 20*time.Millisecond)}

	var (
		logMu sync.Mutex
		vers  = map[uint64]uint64{} // generation -> selector version
	)
	var (
		holders   sync.Map // "version/tenant" -> *atomic.Int64
		ops       atomic.Int64
		sealed    atomic.Bool
		afterSeal atomic.Int64
	)
	// progress waits until the workers made n more admissions, or 30 ms
	// passed (workers may all be queued, or holding grants until the next
	// publications). Pacing only: no verdict depends on it.
	progress := func(n int64) {
		deadline := time.Now().Add(30 * time.Millisecond)
		for s := ops.Load(); ops.Load()-s < n && time.Now().Before(deadline); {
			runtime.Gosched()
		}
	}
	var bad violations
	counter := func(k string) *atomic.Int64 {
		v, _ := holders.LoadOrStore(k, new(atomic.Int64))
		return v.(*atomic.Int64)
	}

	start := time.Now()
	stop := make(chan struct{})
	var updater sync.WaitGroup
	updater.Go(func() {
		defer close(stop)
		version, prevVersion := uint64(1), uint64(1)
		conc1, rateIdx, layer, enabled := true, 0, true, false
		for i := range steps {
			progress(60)
			if i == sealAt {
				f.k.Seal()
				if q := f.k.Stats().QueuedCalls; q != 0 {
					bad.fail("%d requests still queued after Seal returned", q)
				}
				sealed.Store(true)
				progress(200)
				return
			}
			choice := rng.IntN(7)
			if i == sealAt-1 {
				// Seal right after a step that detaches states which
				// waiters may be queued on: the concurrency rule
				// removed, or else the rate algorithm replaced.
				layer = true
				if conc1 {
					choice = 0
				} else {
					choice = 4
				}
			}
			switch choice {
			case 0: // the concurrency rule removed or re-added
				conc1 = !conc1
			case 1: // the partition layer removed or re-added
				layer = !layer
			case 2: // a new selector identity
				prevVersion, version = version, version+1
			case 3: // back to the previous identity (A -> B -> A)
				prevVersion, version = version, prevVersion
			case 4: // the rate algorithm replaced
				rateIdx = 1 - rateIdx
			case 5:
				if enabled {
					_, err := f.k.Disable()
					require.NoError(t, err)
					enabled = false
				}
				continue
			}
			o := kernel.Options{Global: conc(1000), Queue: queue}
			if layer {
				rule := kernel.Rule{Limits: []spi.Spec{rates[rateIdx]}}
				if conc1 {
					rule.Limits = append(rule.Limits, conc(1).Limits[0])
				}
				o.Partition = &kernel.PartitionPolicy{Selector: byTenant(version), MaxPartitions: tenants, IdleTimeout: time.Minute, Rule: rule}
			}
			next := f.k.Generation() + 1
			logMu.Lock()
			vers[next] = version
			logMu.Unlock()
			var err error
			if enabled {
				_, err = f.k.Update(next-1, o)
			} else {
				_, err = f.k.Enable(o)
			}
			require.NoError(t, err)
			enabled = true
		}
	})

	// hold keeps a grant for a moment, or (one grant in four) until two
	// to five more generations are published: holders that span a removal
	// and a re-addition.
	hold := func(rng *rand.Rand, gen uint64) {
		if rng.IntN(4) != 0 {
			runtime.Gosched()
			return
		}
		until := gen + 2 + rng.Uint64N(4)
		for f.k.Generation() < until && !sealed.Load() {
			select {
			case <-stop:
				return
			default:
				runtime.Gosched()
			}
		}
	}

	var work sync.WaitGroup
	for w := range workers {
		work.Go(func() {
			rng := rand.New(rand.NewPCG(seed, uint64(w)))
			var p kernel.Permit
			for {
				select {
				case <-stop:
					return
				default:
				}
				ops.Add(1)
				tenant := fmt.Sprint("t", rng.IntN(tenants))
				wasSealed := sealed.Load()
				if !f.k.Capture(&p) {
					runtime.Gosched()
					continue
				}
				if err := p.Admit(context.Background(), kernel.Request{Method: f.say, Metadata: md{"tenant": tenant}}); err != nil {
					p.Release()
					runtime.Gosched()
					continue
				}
				if wasSealed {
					afterSeal.Add(1)
				}
				if p.HoldsPartitionUnit() {
					logMu.Lock()
					v := vers[p.Generation()]
					logMu.Unlock()
					c := counter(fmt.Sprint(v, "/", tenant))
					if n := c.Add(1); n > 1 {
						bad.fail("%d holders of tenant %s in namespace v%d under limit 1 (generation %d)", n, tenant, v, p.Generation())
					}
					hold(rng, p.Generation())
					c.Add(-1)
				} else {
					hold(rng, p.Generation())
				}
				p.Release()
			}
		})
	}
	updater.Wait()
	work.Wait()

	bad.requireNone(t)
	require.Zero(t, afterSeal.Load(), "requests granted after Seal returned")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, f.k.Drain(ctx))
	st := f.k.Stats()
	require.Zero(t, st.LivePrograms)
	require.Zero(t, st.States)
	require.Empty(t, st.Partitions)
	require.Zero(t, st.QueuedCalls)
	require.Zero(t, st.DoubleReleases)
	t.Logf("sealed at step %d, generation %d, %d ops in %v", sealAt, f.k.Generation(), ops.Load(), time.Since(start))
}
