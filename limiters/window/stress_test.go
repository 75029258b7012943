package window_test

import (
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sluicerpc/sluice/limiters/window"
	"github.com/sluicerpc/sluice/spi"
)

// stressFailures collects failures from goroutines.
type stressFailures struct {
	mu   sync.Mutex
	msgs []string
}

func (f *stressFailures) add(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.msgs) < 20 {
		f.msgs = append(f.msgs, fmt.Sprintf(format, args...))
	}
}

func (f *stressFailures) report(t *testing.T) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, m := range f.msgs {
		t.Error(m)
	}
}

// TestStressReconfigureUnderTraffic runs 8 workers that acquire (and
// sometimes cancel) against one limiter while a reconfigurer cycles through
// limit changes and window (and segments) changes, with a shared explicit
// clock advanced by a ticker, then checks every window of every published
// configuration against the grant log (checkBlocks: no window holds more
// than the largest limit in force during it).
//
// The clock is gated by an RWMutex: a worker holds the read side from
// reading the clock to recording its grant, and the ticker advances the
// clock under the write side, so every call at instant t happens before
// every call at a later instant, as the limiter's contract requires
// (monotonic time). The reconfigurer also holds the read side, so
// publications race with acquisitions at the same instant; a grant that
// overlaps a publication is logged as belonging to either configuration
// (epochs [e0, e1]) and the checker counts it only where that is sound.
func TestStressReconfigureUnderTraffic(t *testing.T) {
	const us = int64(time.Microsecond)
	for _, tt := range []struct {
		name  string
		cycle []refConfig
	}{
		{"fixed", []refConfig{
			{fixed: true, limit: 10, window: 1000 * us, segments: 1},
			{fixed: true, limit: 3, window: 1000 * us, segments: 1},
			{fixed: true, limit: 10, window: 1000 * us, segments: 1},
			{fixed: true, limit: 10, window: 1500 * us, segments: 1},
			{fixed: true, limit: 20, window: 1500 * us, segments: 1},
			{fixed: true, limit: 5, window: 700 * us, segments: 1},
			{fixed: true, limit: 5, window: 2000 * us, segments: 1},
		}},
		{"sliding", []refConfig{
			{limit: 10, window: 1000 * us, segments: 4},
			{limit: 3, window: 1000 * us, segments: 4},
			{limit: 10, window: 1000 * us, segments: 4},
			{limit: 10, window: 1000 * us, segments: 2},
			{limit: 20, window: 2000 * us, segments: 4},
			{limit: 5, window: 600 * us, segments: 3},
			{limit: 8, window: 1000 * us, segments: 5},
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			defer goleak.VerifyNone(t)
			stressReconfigure(t, tt.cycle)
		})
	}
}

func stressReconfigure(t *testing.T, cycle []refConfig) {
	const (
		workers    = 8
		iterations = 20_000 // per worker
		tick       = int64(100 * time.Microsecond)
	)
	l := cycle[0].newLimiter()
	minLimit := cycle[0].limit
	for _, c := range cycle {
		minLimit = min(minLimit, c.limit)
	}

	var (
		gate          sync.RWMutex
		clock         atomic.Int64
		started, done atomic.Int64 // epochs whose Reconfigure has started / returned
		epochs        = []epochRec{{cfg: cycle[0], start: 0}}
		logs          = make([][]grantRec, workers)
		cancels       atomic.Int64
		refusals      atomic.Int64
		failures      stressFailures
		wg, bg        sync.WaitGroup
		stop          = make(chan struct{})
	)

	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// At least iterations, and on until 20 publications and a
			// refusal happened: a ticker or reconfigurer kept off a CPU
			// while the workers ran must not leave the run untight.
			for i := 0; i < iterations || done.Load() < 20 || refusals.Load() == 0; i++ {
				n := int64(1 + (w+i)%3)
				gate.RLock()
				now := clock.Load()
				e0 := done.Load()
				d := l.TryAcquire(at(time.Duration(now)), n)
				e1 := started.Load()
				switch {
				case d.Granted && i%11 == 0:
					l.Cancel(at(time.Duration(now)), n)
					cancels.Add(1)
				case d.Granted:
					logs[w] = append(logs[w], grantRec{t: now, n: n, eMin: int(e0), eMax: int(e1)})
				case d.Hint == spi.HintAt:
					refusals.Add(1)
					if !d.RetryAt.After(at(time.Duration(now))) {
						failures.add("worker %d: retry hint t0+%v is not after now t0+%dns", w, d.RetryAt.Sub(t0), now)
					}
				case d.Hint == spi.HintNever:
					if n <= minLimit {
						failures.add("worker %d: %d units refused for good, but every limit is at least %d", w, n, minLimit)
					}
				default:
					failures.add("worker %d: refusal with hint %v", w, d.Hint)
				}
				gate.RUnlock()
				if i%4 == 0 {
					runtime.Gosched()
				}
			}
		}()
	}

	bg.Add(2)
	go func() { // the ticker
		defer bg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			gate.Lock()
			clock.Add(tick)
			gate.Unlock()
			runtime.Gosched()
		}
	}()
	go func() { // the reconfigurer: at most one publication per instant
		defer bg.Done()
		last := int64(-1)
		for {
			select {
			case <-stop:
				return
			default:
			}
			gate.RLock()
			if now := clock.Load(); now >= last+8*tick {
				e := len(epochs)
				prev, next := epochs[e-1].cfg, cycle[e%len(cycle)]
				next.origin = now
				if next.window == prev.window && next.segments == prev.segments {
					next.origin = prev.origin // a limit change keeps the windows
				}
				epochs = append(epochs, epochRec{cfg: next, start: now})
				started.Store(int64(e))
				if err := l.Reconfigure(at(time.Duration(now)), next.params()); err != nil {
					failures.add("Reconfigure(%v): %v", next, err)
				}
				done.Store(int64(e))
				if s := l.Snapshot(at(time.Duration(now))); s.Limit != next.limit || s.Available != max(0, s.Limit-s.InUse) || s.InUse < 0 {
					failures.add("inconsistent snapshot after Reconfigure(%v): %+v", next, s)
				}
				last = now
			}
			gate.RUnlock()
			runtime.Gosched()
		}
	}()

	wg.Wait()
	close(stop)
	bg.Wait()
	failures.report(t)

	log := slices.Concat(logs...)
	slices.SortStableFunc(log, func(a, b grantRec) int { return int(a.t - b.t) })
	var ambiguous int
	for _, g := range log {
		if g.eMin != g.eMax {
			ambiguous++
		}
	}
	require.NoError(t, checkBlocks(epochs, log, clock.Load()))

	// The run must have been tight: most requests refused, some windows
	// filled to the limit, many publications.
	full := countFullBlocks(epochs, log)
	t.Logf("grants=%d (racing a publication: %d) cancels=%d refusals=%d publications=%d full blocks=%d clock=t0+%v",
		len(log), ambiguous, cancels.Load(), refusals.Load(), len(epochs)-1, full, time.Duration(clock.Load()))
	assert.Greater(t, len(epochs), 20, "publications")
	assert.Positive(t, refusals.Load())
	assert.Positive(t, full, "some windows were filled to their limit")
}

// countFullBlocks counts the blocks of definite epochs that hold exactly
// their epoch's limit.
func countFullBlocks(epochs []epochRec, log []grantRec) int {
	full := 0
	for e, ep := range epochs {
		cfg := ep.cfg
		seen := map[int64]bool{}
		for _, g := range log {
			if g.eMin != e || g.eMax != e {
				continue
			}
			j := (g.t - cfg.origin) / cfg.seg()
			if seen[j] {
				continue
			}
			seen[j] = true
			if blockSum(log, cfg.origin+j*cfg.seg(), cfg.origin+(j+cfg.segments)*cfg.seg(), e) == cfg.limit {
				full++
			}
		}
	}
	return full
}

// TestStressNoGrantIsLost runs workers against a limiter whose clock stands
// still while another goroutine publishes limit, window and segments
// changes: nothing ever expires, so the usage the limiter reports must
// equal the units granted, exactly, whatever the interleaving (a grant lost
// across a publication, or counted twice, would show).
func TestStressNoGrantIsLost(t *testing.T) {
	for _, tt := range []struct {
		name  string
		cycle []spi.Spec
		first refConfig
	}{
		{"fixed", []spi.Spec{window.FixedSpec(60000, time.Second), window.FixedSpec(90000, time.Second), window.FixedSpec(90000, 2*time.Second), window.FixedSpec(100000, 3*time.Second)},
			refConfig{fixed: true, limit: 100000, window: int64(time.Second), segments: 1}},
		{"sliding", []spi.Spec{window.SlidingSpec(60000, time.Second, 4), window.SlidingSpec(90000, time.Second, 4), window.SlidingSpec(90000, 2*time.Second, 2), window.SlidingSpec(100000, 3*time.Second, 3)},
			refConfig{limit: 100000, window: int64(time.Second), segments: 4}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			defer goleak.VerifyNone(t)
			const workers, iterations = 8, 5_000
			now := at(time.Second / 3)
			l := tt.first.newLimiter()
			var (
				granted    atomic.Int64
				published  atomic.Int64
				wg         sync.WaitGroup
				stop       = make(chan struct{})
				reconfDone = make(chan int)
			)
			go func() {
				n := 0
				for {
					select {
					case <-stop:
						reconfDone <- n
						return
					default:
					}
					if err := l.Reconfigure(now, tt.cycle[n%len(tt.cycle)].Params); err != nil {
						panic(err)
					}
					n++
					published.Store(int64(n))
					runtime.Gosched()
				}
			}()
			for w := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					// On past iterations until a publication happened,
					// however late the reconfigurer got a CPU.
					for i := 0; i < iterations || published.Load() == 0; i++ {
						n := int64(1 + (w+i)%2)
						if l.TryAcquire(now, n).Granted {
							granted.Add(n)
						}
					}
				}()
			}
			wg.Wait()
			close(stop)
			publications := <-reconfDone
			s := l.Snapshot(now)
			t.Logf("granted=%d publications=%d snapshot=%+v", granted.Load(), publications, s)
			require.Equal(t, granted.Load(), s.InUse, "usage == units granted")
			require.Positive(t, publications)
		})
	}
}

// TestStressSealRacingGrants seals a limiter while workers acquire at one
// instant: the usage Seal returns must be exactly the units granted (every
// grant either happened before the freeze and is reported, or was refused),
// and nothing is granted after it.
func TestStressSealRacingGrants(t *testing.T) {
	for _, first := range []refConfig{
		{fixed: true, limit: 1 << 30, window: int64(time.Second), segments: 1},
		{limit: 1 << 30, window: int64(time.Second), segments: 8},
	} {
		t.Run(first.kind(), func(t *testing.T) {
			defer goleak.VerifyNone(t)
			now := at(500 * time.Millisecond)
			l := first.newLimiter()
			var (
				granted, afterSeal atomic.Int64
				sealed             atomic.Bool
				wg                 sync.WaitGroup
			)
			for range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						wasSealed := sealed.Load()
						d := l.TryAcquire(now, 1)
						if d.Granted {
							granted.Add(1)
							if wasSealed {
								afterSeal.Add(1)
							}
							continue
						}
						if d != spi.RefuseNever() {
							panic(fmt.Sprintf("unexpected refusal %v", show(d)))
						}
						return
					}
				}()
			}
			for granted.Load() < 1000 { // let the workers get going
				runtime.Gosched()
			}
			u := l.(spi.Handover).Seal(now)
			sealed.Store(true)
			wg.Wait()
			var reported int64
			for _, e := range u {
				reported += e.Units
			}
			t.Logf("granted=%d reported=%d", granted.Load(), reported)
			require.Equal(t, granted.Load(), reported)
			require.Zero(t, afterSeal.Load())
			require.Positive(t, reported)
		})
	}
}

// TestStressOutOfOrderClock lets the workers advance a shared clock
// themselves, so calls routinely arrive with a reading older than one
// already used (a caller behind the current window or segment), while a
// reconfigurer cycles the limit. The limiter treats a late caller as
// arriving at the start of the current window or segment, so a grant
// counts at some instant between the clock reading before the call and
// the one after it; every window (fixed) or run of `segments` segments
// (sliding) must hold at most the largest limit among the grants that
// certainly fall inside it.
func TestStressOutOfOrderClock(t *testing.T) {
	for _, cfg := range []refConfig{
		{fixed: true, limit: 40, window: 2000, segments: 1},
		{limit: 40, window: 2000, segments: 4},
		{limit: 40, window: 2000, segments: 5},
	} {
		t.Run(fmt.Sprintf("%s/%d", cfg.kind(), cfg.segments), func(t *testing.T) {
			defer goleak.VerifyNone(t)
			const workers, iterations = 8, 20_000
			limits := []int64{cfg.limit, cfg.limit / 4, cfg.limit}
			l := cfg.newLimiter()
			var (
				clock    atomic.Int64
				logs     = make([][][2]int64, workers) // {t1, t2, n} flattened below
				sizes    = make([][]int64, workers)
				late     atomic.Int64
				failures stressFailures
				wg       sync.WaitGroup
				stop     = make(chan struct{})
				reconf   = make(chan struct{})
			)
			go func() {
				defer close(reconf)
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					p := cfg
					p.limit = limits[i%len(limits)]
					if err := l.Reconfigure(at(time.Duration(clock.Load())), p.params()); err != nil {
						failures.add("Reconfigure: %v", err)
					}
					runtime.Gosched()
				}
			}()
			for w := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					// On past iterations until some call arrived late,
					// however the workers were scheduled.
					for i := 0; i < iterations || late.Load() == 0; i++ {
						n := int64(1 + (w+i)%3)
						t1 := clock.Add(int64(1 + i%7))
						if i%16 == 0 {
							runtime.Gosched() // arrive late
						}
						d := l.TryAcquire(at(time.Duration(t1)), n)
						t2 := clock.Load()
						if t2 > t1+7 {
							late.Add(1)
						}
						switch {
						case d.Granted && i%13 == 0:
							l.Cancel(at(time.Duration(t1)), n)
						case d.Granted:
							logs[w] = append(logs[w], [2]int64{t1, t2})
							sizes[w] = append(sizes[w], n)
						case d.Hint == spi.HintAt:
							if !d.RetryAt.After(at(time.Duration(t1))) {
								failures.add("retry hint t0+%v not after now t0+%dns", d.RetryAt.Sub(t0), t1)
							}
						case d.Hint == spi.HintNever:
							if n <= cfg.limit/4 {
								failures.add("%d units refused for good", n)
							}
						}
					}
				}()
			}
			wg.Wait()
			close(stop)
			<-reconf
			failures.report(t)

			// Grants certainly inside a block: [t1, t2] within it.
			type grant struct{ t1, t2, n int64 }
			var all []grant
			for w := range workers {
				for i, g := range logs[w] {
					all = append(all, grant{g[0], g[1], sizes[w][i]})
				}
			}
			d, blockLen := cfg.seg(), cfg.window
			end := clock.Load()
			checked, full := 0, 0
			for bs := int64(0); bs < end; bs += d {
				var sum int64
				for _, g := range all {
					if g.t1 >= bs && g.t2 < bs+blockLen {
						sum += g.n
					}
				}
				if sum > cfg.limit {
					t.Fatalf("block [t0+%dns, t0+%dns) holds %d units certainly, limit at most %d", bs, bs+blockLen, sum, cfg.limit)
				}
				checked++
				if sum >= cfg.limit/2 {
					full++
				}
			}
			t.Logf("grants=%d late calls=%d blocks=%d (at least half full: %d)", len(all), late.Load(), checked, full)
			require.Positive(t, late.Load(), "some calls arrived late")
			require.Positive(t, full)
		})
	}
}
