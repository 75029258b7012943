package concurrency_test

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sluicerpc/sluice/limiters/concurrency"
	"github.com/sluicerpc/sluice/spi"
)

// TestStressResizeNeverOverAdmits runs workers that acquire and release while
// a resizer cycles the limit, and checks after every grant that the number of
// units held (counted outside the limiter) is within the largest limit that
// was live at some instant of that grant's window.
//
// The window is tracked with an epoch log. The resizer writes the new limit
// to limits[e], publishes epoch e, and only then calls Resize; when Resize
// returns it records e as applied. A worker reads epoch e0 (then applied a0)
// before TryAcquire, and epoch e1 after counting its grant. The limit in
// force at any instant between the two reads is one of limits[e0-1..e1]:
// limits[e0-1] may still be in force because Resize(limits[e0]) may not have
// happened yet, and any Resize that happened before the second read was
// published as an epoch <= e1 first. The applied epoch narrows the start of
// that window soundly: once a0 is read, Resize(limits[a0]) has returned, so
// no earlier limit can be in force again (a0 >= e0-1 always). Without that
// narrowing every window would reach back to the previous limit of the
// cycle, and with the cycle below no bound could ever drop under 8 units,
// which 8 workers cannot exceed: a limiter over-admitting at limits 1 and 3
// would pass.
//
// The external count is raised after a grant and lowered before the release,
// so it never exceeds the limiter's held count. Held units only grow by
// grants, and a grant leaves held <= the limit in force at its instant, so
// the count read right after our increment is at most the limit in force at
// the latest grant inside our window: at most max(limits[first..e1]).
func TestStressResizeNeverOverAdmits(t *testing.T) {
	defer goleak.VerifyNone(t)

	const (
		workers    = 8
		iterations = 100_000 // per worker
		maxResizes = 1 << 18
	)
	cycle := []int64{64, 8, 1, 32, 3}

	l := concurrency.New(cycle[0])

	// limits[e] is the limit of epoch e. epoch is the newest published
	// entry; applied is the newest entry whose Resize has returned. A plain
	// slice is race-free: limits[e] is written before epoch e is published
	// and read only after an epoch >= e was loaded.
	limits := make([]int64, maxResizes+1)
	limits[0] = cycle[0]
	var epoch, applied atomic.Int64

	// window returns the smallest and largest limit of limits[first..last].
	window := func(first, last int64) (lo, hi int64) {
		lo, hi = limits[last], limits[last]
		for _, limit := range limits[first : last+1] {
			lo, hi = min(lo, limit), max(hi, limit)
		}
		return lo, hi
	}

	var (
		holders    atomic.Int64 // units held, counted outside the limiter
		maxHolders atomic.Int64
		grants     atomic.Int64
		onRelease  atomic.Int64
		never      atomic.Int64
		resizes    atomic.Int64
		tight      atomic.Int64 // grants checked against a bound of at most 3

		failMu   sync.Mutex
		failures []string
	)
	fail := func(format string, args ...any) {
		failMu.Lock()
		defer failMu.Unlock()
		if len(failures) < 20 {
			failures = append(failures, fmt.Sprintf(format, args...))
		}
	}

	start := make(chan struct{})
	workersDone := make(chan struct{})
	var resizer, wg sync.WaitGroup

	resizer.Add(1)
	go func() {
		defer resizer.Done()
		<-start
		for e := int64(1); e <= maxResizes; e++ {
			select {
			case <-workersDone:
				return
			default:
			}
			limit := cycle[e%int64(len(cycle))]
			limits[e] = limit
			epoch.Store(e) // publish before Resize
			l.Resize(limit)
			applied.Store(e)
			resizes.Add(1)

			s := l.Snapshot(zero)
			if s.Limit != limit || s.Available != max(0, s.Limit-s.InUse) || s.InUse < 0 || s.InUse > 2*workers {
				fail("inconsistent snapshot after Resize(%d): %+v", limit, s)
			}
			for range 4 {
				runtime.Gosched()
			}
		}
	}()

	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			// At least iterations, and on until the resizer has applied
			// every limit of the cycle and some grant was checked against
			// a small one: a resizer kept off a CPU while the workers ran
			// must not leave those checks untried.
			for i := 0; i < iterations || resizes.Load() < int64(len(cycle)) || tight.Load() == 0; i++ {
				n := int64(1)
				if (w+i)%5 == 0 {
					n = 2
				}

				e0 := epoch.Load()
				first := max(e0-1, applied.Load(), 0)
				d := l.TryAcquire(zero, n)
				if !d.Granted {
					e1 := epoch.Load()
					lo, hi := window(first, e1)
					switch d.Hint {
					case spi.HintOnRelease:
						onRelease.Add(1)
						if n > hi {
							fail("worker %d: n=%d refused on-release, but it exceeds every live limit %v (want never)", w, n, limits[first:e1+1])
						}
					case spi.HintNever:
						never.Add(1)
						if n <= lo {
							fail("worker %d: n=%d refused never, but it fits every live limit %v", w, n, limits[first:e1+1])
						}
					default:
						fail("worker %d: refusal with hint %v", w, d.Hint)
					}
					continue
				}

				grants.Add(1)
				c := holders.Add(n)
				e1 := epoch.Load()
				_, bound := window(first, e1)
				if c > bound {
					fail("worker %d: %d units held right after a grant of %d, but the live limits were %v (epochs %d..%d)",
						w, c, n, limits[first:e1+1], first, e1)
				}
				if bound <= 3 {
					tight.Add(1)
				}
				for {
					m := maxHolders.Load()
					if c <= m || maxHolders.CompareAndSwap(m, c) {
						break
					}
				}
				if i%3 == 0 {
					runtime.Gosched() // hold the units for a moment
				}
				if holders.Add(-n) < 0 {
					fail("worker %d: external holder count went negative", w)
				}
				l.Release(zero, n)
			}
		}()
	}

	close(start)
	wg.Wait()
	close(workersDone)
	resizer.Wait()

	failMu.Lock()
	for _, f := range failures {
		t.Error(f)
	}
	failMu.Unlock()

	t.Logf("grants=%d (checked against a bound <= 3: %d) refused(on-release)=%d refused(never)=%d resizes=%d max held=%d final limit=%d",
		grants.Load(), tight.Load(), onRelease.Load(), never.Load(), resizes.Load(), maxHolders.Load(), l.Limit())

	assert.Zero(t, holders.Load())
	require.Zero(t, l.Held(), "every unit was released")
	assert.Equal(t, limits[epoch.Load()], l.Limit(), "the last resize is in force")
	assert.Equal(t, spi.Snapshot{Kind: "concurrency", Limit: l.Limit(), InUse: 0, Available: l.Limit()}, l.Snapshot(zero))
	assert.Positive(t, grants.Load())
	assert.Positive(t, resizes.Load())
	assert.Positive(t, tight.Load(), "some grants were checked against a small limit")
}
