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
	"github.com/sluicerpc/sluice/limiters/window"
	"github.com/sluicerpc/sluice/spi"
)

// TestStressLateReleaseUnusedLendsNothing: workers keep a window limiter
// saturated while the clock moves on segment by segment; a third of the
// granted requests are refused "by a later step", often some segments
// later (ReleaseUnused), the rest are used. The quota a window consumed is
// at least its used requests plus those given back too late to come back
// (after their fixed window ended; after their sliding segment left the
// window); it never exceeds the limit. A give-back that landed where its
// call came instead of where its grant was counted would lend a later
// window a unit.
//
// The clock moves only outside admissions and give-backs (an RWMutex:
// they share it, the clock's step takes it), so every instant is the one
// its worker reads under the same lock.
func TestStressLateReleaseUnusedLendsNothing(t *testing.T) {
	const (
		limit    = 6
		segments = 4
		seg      = 10 * time.Millisecond
		steps    = 300 // clock steps of one segment
		workers  = 4
	)
	for _, tc := range []struct {
		name string
		spec spi.Spec
		span int64 // segments one window spans
		// late reports whether a give-back at segment now of a grant at
		// segment s comes too late to be given back: the window (the
		// sliding window's span) that counted it has passed.
		late func(s, now int64) bool
	}{
		{"fixed", window.FixedSpec(limit, segments*seg), segments, func(s, now int64) bool { return now/segments != s/segments }},
		{"sliding", window.SlidingSpec(limit, segments*seg, segments), segments, func(s, now int64) bool { return now >= s+segments }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newClockedFixture(t)
			f.enable(globalRate(tc.spec))
			start := f.clock.Now()
			segOf := func(at time.Time) int64 { return int64(at.Sub(start) / seg) }

			var (
				clockMu sync.RWMutex
				usedMu  sync.Mutex
				used    = map[int64]int64{} // segment -> quota consumed
				done    atomic.Bool
				unused  atomic.Int64
				ops     atomic.Int64 // admissions tried: the clock's pace
			)
			var wg sync.WaitGroup
			for w := range workers {
				wg.Go(func() {
					r := rand.New(rand.NewPCG(uint64(w), 11))
					type grant struct {
						p        *kernel.Permit
						seg, due int64 // given back once the clock is at segment due
					}
					var pending []grant
					consume := func(seg int64) {
						usedMu.Lock()
						used[seg]++
						usedMu.Unlock()
					}
					giveBack := func(all bool) {
						kept := pending[:0]
						for _, g := range pending {
							clockMu.RLock()
							now := segOf(f.clock.Now())
							if !all && now < g.due {
								clockMu.RUnlock()
								kept = append(kept, g)
								continue
							}
							g.p.ReleaseUnused()
							clockMu.RUnlock()
							if tc.late(g.seg, now) {
								consume(g.seg) // too late: nothing back
								unused.Add(1)
							}
						}
						pending = kept
					}
					for !done.Load() {
						p := new(kernel.Permit)
						clockMu.RLock()
						var at time.Time
						granted := false
						if f.k.Capture(p) {
							granted = p.Admit(context.Background(), kernel.Request{Method: f.say}) == nil
							at = f.clock.Now()
						}
						clockMu.RUnlock()
						ops.Add(1)
						switch {
						case !granted:
							p.Release()
							runtime.Gosched()
						case r.IntN(3) == 0:
							s := segOf(at)
							pending = append(pending, grant{p, s, s + r.Int64N(2*tc.span)}) // refused later
						default:
							consume(segOf(at))
							p.Release()
						}
						giveBack(false)
					}
					giveBack(true)
				})
			}
			for range steps {
				// Each segment sees 40 admissions, several windows'
				// worth: the workers keep every window saturated.
				for target := ops.Load() + 40; ops.Load() < target; {
					runtime.Gosched()
				}
				clockMu.Lock()
				f.clock.Advance(seg)
				clockMu.Unlock()
			}
			done.Store(true)
			wg.Wait()

			// Fixed windows are aligned to the enable instant: window k
			// is segments [k*span, (k+1)*span). A sliding window counts
			// any span consecutive segments.
			var saturated int
			for s := int64(0); s <= steps; s++ {
				first := s - tc.span + 1
				if tc.name == "fixed" {
					if s%tc.span != tc.span-1 {
						continue
					}
				}
				var n int64
				for j := max(first, 0); j <= s; j++ {
					n += used[j]
				}
				require.LessOrEqual(t, n, int64(limit), fmt.Sprintf("quota consumed in segments [%d, %d]", first, s))
				if n == limit {
					saturated++
				}
			}
			t.Logf("%d late give-backs; %d windows used to the limit", unused.Load(), saturated)
			require.NotZero(t, unused.Load())
			require.NotZero(t, saturated, "the workers never saturated a window: the check proved nothing")
		})
	}
}
