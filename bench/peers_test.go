package bench

// BenchmarkPeers and BenchmarkPeersParallel measure, in one run, the cost of
// one immediate single-scope grant and its release in sluice's kernel and in
// the admission primitives of other Go libraries. Every subject has ample
// capacity and is never refused (a refusal fails the benchmark); TestPeersAdmit
// builds each subject with capacity 1 through the same constructor and shows
// that it really limits, so no benchmark can silently measure a no-op.
//
// Reproduce (docs/benchmarks.md):
//
//	cd bench && go test -run '^$' -bench 'BenchmarkPeers' -benchmem -count 6 ./...

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alibaba/sentinel-golang/api"
	"github.com/alibaba/sentinel-golang/core/base"
	"github.com/alibaba/sentinel-golang/core/isolation"
	"github.com/failsafe-go/failsafe-go/bulkhead"
	"go.uber.org/goleak"
	"golang.org/x/sync/semaphore"
	"golang.org/x/time/rate"

	"github.com/sluicerpc/sluice/bench/internal/quietsentinel"
	"github.com/sluicerpc/sluice/kernel"
	"github.com/sluicerpc/sluice/limiters/concurrency"
	"github.com/sluicerpc/sluice/spi"
)

// ample is the capacity of every benchmarked subject: far above anything a
// benchmark holds at once, so no grant is ever refused.
const ample = 1 << 20

// TestMain checks that no test or benchmark leaves a goroutine behind. No
// subject starts one: sluice's kernel only starts timers for queued waiters
// (queueing is off here), and sentinel-golang is initialized with its metric
// log, system collectors, cached clock and metric exporter all disabled (see
// initSentinel), which are its only background goroutines in v1.0.4.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// peer is one subject: serial runs b.N grant+release pairs on one goroutine,
// parallel runs them under b.RunParallel.
type peer struct {
	name     string
	serial   func(b *testing.B)
	parallel func(b *testing.B)
}

var peers = []peer{
	{"sluice", func(b *testing.B) { benchSluice(b, true, false) }, func(b *testing.B) { benchSluice(b, true, true) }},
	{"sluice-disabled", func(b *testing.B) { benchSluice(b, false, false) }, func(b *testing.B) { benchSluice(b, false, true) }},
	{"x-sync-semaphore", benchSemaphore, benchSemaphoreParallel},
	{"x-time-rate", benchRate, benchRateParallel},
	{"sentinel-golang", benchSentinel, benchSentinelParallel},
	{"failsafe-go-bulkhead", benchBulkhead, benchBulkheadParallel},
}

func BenchmarkPeers(b *testing.B) {
	for _, p := range peers {
		b.Run(p.name, p.serial)
	}
}

func BenchmarkPeersParallel(b *testing.B) {
	for _, p := range peers {
		b.Run(p.name, p.parallel)
	}
}

// --- sluice ---------------------------------------------------------------

type sluicePeer struct {
	k   *kernel.Kernel
	req kernel.Request
}

// newSluice returns a kernel over a one-method catalog whose published
// program has one Global concurrency limit of limit units and no queue. With
// enabled false the program is published and then disabled, so Capture
// returns false: the path of a server whose admission was switched off.
func newSluice(tb testing.TB, limit int64, enabled bool) *sluicePeer {
	tb.Helper()
	var cb kernel.CatalogBuilder
	m := cb.MustAdd("bench", "Op")
	k, err := kernel.New(kernel.Config{Catalog: cb.Build()})
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := k.Enable(kernel.Options{Global: kernel.Rule{Limits: []spi.Spec{concurrency.Spec(limit)}}}); err != nil {
		tb.Fatal(err)
	}
	if !enabled {
		if _, err := k.Disable(); err != nil {
			tb.Fatal(err)
		}
	}
	tb.Cleanup(func() {
		st := k.Stats()
		for _, sc := range st.Scopes {
			if sc.InUse != 0 || sc.Waiters != 0 {
				tb.Errorf("sluice: scope %s left with %d in use, %d waiters", sc.Name, sc.InUse, sc.Waiters)
			}
		}
		if st.DoubleReleases != 0 {
			tb.Errorf("sluice: %d double releases", st.DoubleReleases)
		}
		k.Seal()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := k.Drain(ctx); err != nil {
			tb.Errorf("sluice: drain: %v", err)
		}
	})
	return &sluicePeer{k: k, req: kernel.Request{Method: m}}
}

// benchSluice measures one request's admission as a server writes it:
// Capture, then (only if a program was captured) Admit and Release, reusing
// one Permit per goroutine as a server reuses its per-call state.
func benchSluice(b *testing.B, enabled, parallel bool) {
	s := newSluice(b, ample, enabled)
	ctx := context.Background()
	var probe kernel.Permit
	if got := s.k.Capture(&probe); got != enabled {
		b.Fatalf("Capture = %v on a kernel with enabled = %v", got, enabled)
	}
	probe.Release()
	b.ReportAllocs()

	if !parallel {
		var p kernel.Permit
		for b.Loop() {
			if s.k.Capture(&p) {
				if err := p.Admit(ctx, s.req); err != nil {
					b.Fatal(err)
				}
				p.Release()
			}
		}
		return
	}
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		var p kernel.Permit
		for pb.Next() {
			if s.k.Capture(&p) {
				if err := p.Admit(ctx, s.req); err != nil {
					b.Error(err)
					return
				}
				p.Release()
			}
		}
	})
}

// --- golang.org/x/sync/semaphore -----------------------------------------

func benchSemaphore(b *testing.B) {
	s := semaphore.NewWeighted(ample)
	b.ReportAllocs()
	for b.Loop() {
		if !s.TryAcquire(1) {
			b.Fatal("semaphore refused")
		}
		s.Release(1)
	}
}

func benchSemaphoreParallel(b *testing.B) {
	s := semaphore.NewWeighted(ample)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if !s.TryAcquire(1) {
				b.Error("semaphore refused")
				return
			}
			s.Release(1)
		}
	})
}

// --- golang.org/x/time/rate ----------------------------------------------

// newBenchRate is a finite limit (not rate.Inf, whose Allow skips the bucket
// arithmetic) so large that Allow never refuses: 1e12 tokens/s refills a
// burst of 2^30 faster than any loop drains it. There is no release.
func newBenchRate(tb testing.TB) *rate.Limiter {
	l := rate.NewLimiter(rate.Limit(1e12), 1<<30)
	if l.Limit() == rate.Inf {
		tb.Fatal("x/time/rate limiter is infinite: Allow would not touch the bucket")
	}
	return l
}

func benchRate(b *testing.B) {
	l := newBenchRate(b)
	b.ReportAllocs()
	for b.Loop() {
		if !l.Allow() {
			b.Fatal("rate limiter refused")
		}
	}
}

func benchRateParallel(b *testing.B) {
	l := newBenchRate(b)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if !l.Allow() {
				b.Error("rate limiter refused")
				return
			}
		}
	})
}

// --- github.com/alibaba/sentinel-golang ----------------------------------

var (
	sentinelOnce sync.Once
	sentinelErr  error
	sentinelSeq  atomic.Int64
)

// initSentinel initializes sentinel-golang once per process, writing
// nowhere: the record log goes to quietsentinel.Logger (a configured Logger replaces
// the file logger, so the log directory is never created), and the metric
// log, the system load/CPU/memory collectors, the cached-time ticker and the
// metric HTTP exporter are off, so no background goroutine is started.
func initSentinel(tb testing.TB) {
	tb.Helper()
	sentinelOnce.Do(func() {
		sentinelErr = api.InitWithConfig(quietsentinel.Config("sluice-bench"))
	})
	if sentinelErr != nil {
		tb.Fatalf("sentinel init: %v", sentinelErr)
	}
}

// newSentinel returns a fresh resource (sentinel's statistics are global per
// resource name) guarded by an isolation rule: at most threshold entries in
// flight. That is sentinel's concurrency limit, the like-for-like of a
// single concurrency scope; every entry also runs sentinel's whole default
// slot chain (stat prepare, system, flow, isolation, hotspot and circuit
// breaker checks, sliding-window statistics).
func newSentinel(tb testing.TB, threshold uint32) string {
	tb.Helper()
	initSentinel(tb)
	res := fmt.Sprintf("sluice-bench-%d", sentinelSeq.Add(1))
	if _, err := isolation.LoadRulesOfResource(res, []*isolation.Rule{{
		Resource: res, MetricType: isolation.Concurrency, Threshold: threshold,
	}}); err != nil {
		tb.Fatalf("sentinel: load isolation rule: %v", err)
	}
	if rules := isolation.GetRulesOfResource(res); len(rules) != 1 || rules[0].Threshold != threshold {
		tb.Fatalf("sentinel: isolation rules of %s = %v, want one with threshold %d", res, rules, threshold)
	}
	tb.Cleanup(func() {
		if err := isolation.ClearRulesOfResource(res); err != nil {
			tb.Errorf("sentinel: clear rules: %v", err)
		}
	})
	return res
}

func benchSentinel(b *testing.B) {
	res := newSentinel(b, ample)
	b.ReportAllocs()
	for b.Loop() {
		e, blk := api.Entry(res)
		if blk != nil {
			b.Fatal(blk)
		}
		e.Exit()
	}
}

func benchSentinelParallel(b *testing.B) {
	res := newSentinel(b, ample)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			e, blk := api.Entry(res)
			if blk != nil {
				b.Error(blk)
				return
			}
			e.Exit()
		}
	})
}

// --- github.com/failsafe-go/failsafe-go bulkhead ---------------------------

func benchBulkhead(b *testing.B) {
	bh := bulkhead.New[any](ample)
	b.ReportAllocs()
	for b.Loop() {
		if !bh.TryAcquirePermit() {
			b.Fatal("bulkhead refused")
		}
		bh.ReleasePermit()
	}
}

func benchBulkheadParallel(b *testing.B) {
	bh := bulkhead.New[any](ample)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if !bh.TryAcquirePermit() {
				b.Error("bulkhead refused")
				return
			}
			bh.ReleasePermit()
		}
	})
}

// --- sanity: every subject really limits ----------------------------------

// TestPeersAdmit builds each benchmarked subject with capacity 1, through the
// same constructor or API as its benchmark, and checks that a second grant is
// refused while the first is held and succeeds again after its release.
func TestPeersAdmit(t *testing.T) {
	ctx := context.Background()
	checks := map[string]func(t *testing.T){
		"sluice": func(t *testing.T) {
			s := newSluice(t, 1, true)
			var p1, p2 kernel.Permit
			if !s.k.Capture(&p1) {
				t.Fatal("Capture = false on an enabled kernel")
			}
			if err := p1.Admit(ctx, s.req); err != nil {
				t.Fatalf("first Admit: %v", err)
			}
			if !s.k.Capture(&p2) {
				t.Fatal("second Capture = false")
			}
			err := p2.Admit(ctx, s.req)
			if r, ok := kernel.ReasonOf(err); !ok || r != kernel.ReasonConcurrency {
				t.Fatalf("second Admit = %v, want a concurrency refusal", err)
			}
			if !errors.Is(err, kernel.ErrRejected) {
				t.Fatalf("second Admit error %v does not match ErrRejected", err)
			}
			p2.Release() // a refused permit holds nothing; Release just idles it
			p1.Release()
			// Both permits are reused, as the benchmark reuses its permit.
			if !s.k.Capture(&p2) {
				t.Fatal("Capture after release = false")
			}
			if err := p2.Admit(ctx, s.req); err != nil {
				t.Fatalf("Admit after release: %v", err)
			}
			p2.Release()
		},

		"sluice-disabled": func(t *testing.T) {
			// The disabled subject bypasses policy: even a limit of 1 in the
			// program that was disabled must not be captured, so the benchmark
			// measures the disabled path and nothing else.
			s := newSluice(t, 1, false)
			var p1, p2 kernel.Permit
			if s.k.Capture(&p1) || s.k.Capture(&p2) {
				t.Fatal("Capture = true on a disabled kernel")
			}
			if p1.Generation() != 0 || p1.Granted() {
				t.Fatal("a permit refused by Capture was touched")
			}
		},

		"x-sync-semaphore": func(t *testing.T) {
			s := semaphore.NewWeighted(1)
			if !s.TryAcquire(1) {
				t.Fatal("first TryAcquire refused")
			}
			if s.TryAcquire(1) {
				t.Fatal("second TryAcquire granted at capacity 1")
			}
			s.Release(1)
			if !s.TryAcquire(1) {
				t.Fatal("TryAcquire after release refused")
			}
			s.Release(1)
		},

		"x-time-rate": func(t *testing.T) {
			// Burst 1 at the benchmark's 1e12/s would refill within a
			// nanosecond, so the refusal is shown at a slow rate; the
			// benchmark's limiter is checked to be finite (not rate.Inf).
			l := rate.NewLimiter(rate.Every(time.Hour), 1)
			if !l.Allow() {
				t.Fatal("first Allow refused")
			}
			if l.Allow() {
				t.Fatal("second Allow granted with burst 1")
			}
			newBenchRate(t)
		},

		"sentinel-golang": func(t *testing.T) {
			res := newSentinel(t, 1)
			e1, blk := api.Entry(res)
			if blk != nil {
				t.Fatalf("first Entry blocked: %v", blk)
			}
			e2, blk := api.Entry(res)
			if blk == nil {
				e2.Exit()
				e1.Exit()
				t.Fatal("second concurrent Entry passed an isolation threshold of 1: the rule is not checked")
			}
			if blk.BlockType() != base.BlockTypeIsolation {
				t.Fatalf("second Entry blocked by %v, want isolation", blk.BlockType())
			}
			e1.Exit()
			e3, blk := api.Entry(res)
			if blk != nil {
				t.Fatalf("Entry after Exit blocked: %v", blk)
			}
			e3.Exit()
		},

		"failsafe-go-bulkhead": func(t *testing.T) {
			bh := bulkhead.New[any](1)
			if !bh.TryAcquirePermit() {
				t.Fatal("first TryAcquirePermit refused")
			}
			if bh.TryAcquirePermit() {
				t.Fatal("second TryAcquirePermit granted at capacity 1")
			}
			bh.ReleasePermit()
			if !bh.TryAcquirePermit() {
				t.Fatal("TryAcquirePermit after release refused")
			}
			bh.ReleasePermit()
		},
	}

	// Every benchmark subject has a check, run under the subject's name
	// (subjects added in other files register theirs in moreChecks).
	for _, p := range peers {
		check, ok := checks[p.name]
		if !ok {
			check, ok = moreChecks[p.name]
		}
		if !ok {
			t.Errorf("benchmark subject %q has no sanity check", p.name)
			continue
		}
		t.Run(p.name, check)
	}
}
