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
)

// violations collects what a stress checker found, from any goroutine: the
// count and the first one, which the test reports once the workers stop.
type violations struct {
	n     atomic.Int64
	first atomic.Value
}

func (v *violations) fail(format string, args ...any) {
	v.n.Add(1)
	v.first.CompareAndSwap(nil, fmt.Sprintf(format, args...))
}

func (v *violations) requireNone(t testing.TB) {
	t.Helper()
	require.Zero(t, v.n.Load(), "first: %v", v.first.Load())
}

// boundLog records, for every generation the updater publishes, the
// concurrency bound of each checked scope (0: no rule, or disabled). The
// updater writes a generation's entry before publishing it.
type boundLog struct {
	global, method []atomic.Int64
}

func newBoundLog(n int) *boundLog {
	return &boundLog{global: make([]atomic.Int64, n), method: make([]atomic.Int64, n)}
}

// maxBound returns the largest bound of scope over generations [lo, hi],
// the generations whose program may have been live while a grant was being
// decided: from one before the generation read before Capture to one after
// the generation read after the grant (a commit precedes the generation
// number's increment).
func maxBound(scope []atomic.Int64, lo, hi uint64) int64 {
	if lo > 0 {
		lo--
	}
	hi++
	var m int64
	for g := lo; g <= hi && g < uint64(len(scope)); g++ {
		m = max(m, scope[g].Load())
	}
	return m
}

// The randomized stress test of DESIGN.md section 8: many workers, an
// updater cycling through disabled / global 64 / global 8 / method rule
// add-remove / queue shrink-grow, and a checker that every grant left its
// scope's holder count within the bound of a program live during the
// grant (old holders above a shrunk bound are allowed; a new grant above
// it never is), with every counter back to zero at the end.
func TestStressUpdatesUnderTraffic(t *testing.T) {
	const (
		workers     = 8
		cycles      = 12
		opsPerStep  = 200 // admissions the workers make between two steps
		methodLimit = 3
	)
	f := newFixture(t)
	f.k.SetHooks(nil)
	log := newBoundLog(cycles*10 + 2)

	type step struct {
		name   string
		global int64 // 0: disabled
		method int64 // 0: no method rule
		queue  int
	}
	steps := []step{
		{"disabled", 0, 0, 0},
		{"global 64", 64, 0, 16},
		{"global 8", 8, 0, 16},
		{"global 8 + method", 8, methodLimit, 16},
		{"queue shrink", 8, methodLimit, 1},
		{"queue grow", 8, methodLimit, 32},
		{"method removed", 8, 0, 32},
		{"global 64 + method", 64, methodLimit, 4},
		{"global 2", 2, 0, 0},
		{"disabled", 0, 0, 0},
	}
	options := func(s step) kernel.Options {
		o := kernel.Options{Global: conc(s.global)}
		if s.method > 0 {
			o.Methods = map[string]kernel.Rule{echoSay: conc(s.method)}
		}
		if s.queue > 0 {
			o = withQueue(o, s.queue, 1<<20, 2*time.Millisecond)
		}
		return o
	}

	var (
		globalHeld, methodHeld atomic.Int64
		violations             atomic.Int64
		granted, refused, ops  atomic.Int64
		firstViolation         atomic.Value
	)
	violate := func(msg string) {
		violations.Add(1)
		firstViolation.CompareAndSwap(nil, msg)
	}

	stop := make(chan struct{})
	var updater sync.WaitGroup
	updater.Go(func() {
		defer close(stop)
		enabled := false
		for i := range cycles * len(steps) {
			// Let the workers make progress under the current program.
			for start, deadline := ops.Load(), time.Now().Add(time.Second); ops.Load()-start < opsPerStep && time.Now().Before(deadline); {
				runtime.Gosched()
			}
			s := steps[i%len(steps)]
			next := f.k.Generation() + 1
			if s.global == 0 {
				if !enabled {
					continue
				}
				log.global[next].Store(0)
				log.method[next].Store(0)
				g, err := f.k.Disable()
				require.NoError(t, err)
				require.Equal(t, next, g)
				enabled = false
			} else {
				log.global[next].Store(s.global)
				log.method[next].Store(s.method)
				var g uint64
				var err error
				if enabled {
					g, err = f.k.Update(next-1, options(s))
				} else {
					g, err = f.k.Enable(options(s))
				}
				require.NoError(t, err)
				require.Equal(t, next, g)
				enabled = true
			}
		}
	})

	var work sync.WaitGroup
	for w := range workers {
		work.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			methods := []kernel.MethodID{f.say, f.say, f.shout, f.add}
			var p kernel.Permit
			for {
				select {
				case <-stop:
					return
				default:
				}
				ops.Add(1)
				m := methods[rng.IntN(len(methods))]
				e0 := f.k.Generation()
				if !f.k.Capture(&p) {
					continue // disabled: bypass, nothing to count
				}
				ctx, cancel := context.WithTimeout(context.Background(), time.Duration(1+rng.IntN(3))*time.Millisecond)
				err := p.Admit(ctx, kernel.Request{Method: m, Bytes: int64(rng.IntN(64))})
				cancel()
				if err != nil {
					refused.Add(1)
					p.Release()
					runtime.Gosched()
					continue
				}
				granted.Add(1)
				gen := p.Generation()
				hasMethod := m == f.say && log.method[gen].Load() > 0
				gh := globalHeld.Add(1)
				var mh int64
				if hasMethod {
					mh = methodHeld.Add(1)
				}
				e1 := f.k.Generation()
				if b := maxBound(log.global, min(e0, gen), e1); gh > b {
					violate("global over-admission")
				}
				if hasMethod {
					if b := maxBound(log.method, min(e0, gen), e1); mh > b {
						violate("method over-admission")
					}
				}
				for range rng.IntN(4) {
					runtime.Gosched()
				}
				if hasMethod {
					methodHeld.Add(-1)
				}
				globalHeld.Add(-1)
				p.Release()
			}
		})
	}
	updater.Wait()
	work.Wait()

	require.Zero(t, violations.Load(), "first: %v", firstViolation.Load())
	require.Positive(t, granted.Load())
	require.Positive(t, refused.Load())
	t.Logf("generations=%d granted=%d refused=%d", f.k.Generation(), granted.Load(), refused.Load())

	f.k.Seal()
	require.NoError(t, f.k.Drain(context.Background()))
	st := f.k.Stats()
	require.Zero(t, st.LivePrograms)
	require.Zero(t, st.States)
	require.Zero(t, st.QueuedCalls)
	require.Zero(t, st.QueuedBytes)
	require.Zero(t, st.DoubleReleases)
	require.Zero(t, globalHeld.Load())
	require.Zero(t, methodHeld.Load())
}
