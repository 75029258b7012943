package tokenbucket_test

import (
	"fmt"
	"math/big"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sluicerpc/sluice/limiters/tokenbucket"
	"github.com/sluicerpc/sluice/spi"
)

// TestStressGrantsRacingChangesAreCountedOnce drains a bucket from 8
// goroutines while another one keeps changing every option (mode, period,
// rate, capacity) at the same instant. Time stands still and every capacity
// is at least the initial tokens, so nothing refills and nothing is cut: the
// grants must add up to exactly the initial tokens. A grant that landed on a
// config being replaced and was lost would show as over-admission, one
// counted twice as under-admission.
func TestStressGrantsRacingChangesAreCountedOnce(t *testing.T) {
	defer goleak.VerifyNone(t)

	const (
		workers = 8
		initial = 200_000
	)
	cycle := []tokenbucket.Options{
		discrete(initial, 1, time.Hour),
		continuous(2*initial, 1000, time.Second),
		discrete(3*initial, 7, time.Minute),
		continuous(initial, 3, time.Second), // 1/1e9-token fixed point
		discrete(initial, initial, time.Hour),
	}
	l := newBucket(t, cycle[0])

	var (
		granted atomic.Int64
		updates atomic.Int64
		wg      sync.WaitGroup
		done    = make(chan struct{})
		failMu  sync.Mutex
		fails   []string
	)
	fail := func(format string, args ...any) {
		failMu.Lock()
		defer failMu.Unlock()
		if len(fails) < 10 {
			fails = append(fails, fmt.Sprintf(format, args...))
		}
	}

	updaterDone := make(chan struct{})
	go func() {
		defer close(updaterDone)
		last := int64(initial)
		for i := 1; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			if err := l.Update(t0, cycle[i%len(cycle)]); err != nil {
				fail("Update: %v", err)
				return
			}
			updates.Add(1)
			s := l.Snapshot(t0)
			left := s.Limit - s.InUse
			if left > last || left < 0 || s.Available != left {
				fail("snapshot after update %d: %+v (tokens were %d)", i, s, last)
			}
			last = left
		}
	}()

	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				// The second half of the tokens waits for every option of
				// the cycle to have been applied: the grants race changes
				// however the updater is scheduled.
				for granted.Load() >= initial/2 && updates.Load() < int64(len(cycle)) {
					runtime.Gosched()
				}
				n := int64(1 + (w+i)%2)
				d := l.TryAcquire(t0, n)
				if d.Granted {
					if granted.Add(n) > initial {
						fail("worker %d: more than the %d initial tokens granted", w, initial)
						return
					}
					if i%16 == 0 {
						runtime.Gosched() // let the updater in often
					}
					continue
				}
				if d.Hint != spi.HintAt {
					fail("worker %d: refusal %+v", w, d)
					return
				}
				if n == 1 {
					return // empty: nothing refills while time stands still
				}
			}
		}()
	}
	wg.Wait()
	close(done)
	<-updaterDone

	for _, f := range fails {
		t.Error(f)
	}
	t.Logf("granted %d units across %d updates", granted.Load(), updates.Load())
	require.Equal(t, int64(initial), granted.Load(), "every initial token granted exactly once")
	s := l.Snapshot(t0)
	assert.Equal(t, s.Limit, s.InUse, "the bucket is empty")
	assert.Positive(t, updates.Load())
}

// TestStressNoFreeBurst runs 8 goroutines that acquire (and sometimes cancel
// at once, as the kernel does) while an updater advances a shared clock
// and publishes random options, and then checks every grant against the
// publication log.
//
// Attribution: the updater logs publication k (options, instant P_k) and
// stores epoch k before calling Update, and stores applied = k after it
// returns. A worker reads applied (a0) before TryAcquire and epoch (e1)
// after it: the config that decided the grant is one of a0..e1. Grants
// decided by configs j..k happen at instants up to P_{k+1}, and config j
// starts with at most its capacity L_j (tokens carry capped at the new
// capacity; the first starts full), so for every j <= k:
//
//	units granted with a0 >= j and e1 <= k
//	    <= L_j + sum over i in j..k of refill_i(P_i, P_{i+1})
//
// where refill_i is computed from the options and phase the package
// promises (a cadence change restarts the period at P_i), and ranges that
// include an unlimited config are not bounded. With j = k this is "between
// two publications, admitted <= tokens at the first + refill"; with j < k it
// rules out a free burst at any publication in between. A cancelled grant
// is left out: giving units back can only lower later admissions.
func TestStressNoFreeBurst(t *testing.T) {
	defer goleak.VerifyNone(t)

	const (
		workers     = 8
		maxEpochs   = 400 // publications; the run ends after the last
		maxStepNano = int64(200 * time.Microsecond)
	)
	type pub struct {
		opts   tokenbucket.Options
		at     int64 // ns after t0
		origin int64 // discrete boundaries are origin + k·period
	}
	type grant struct {
		a0, e1 int
		n      int64
	}

	rng := rand.New(rand.NewPCG(1, 2))
	randomOptions := func() tokenbucket.Options {
		return tokenbucket.Options{
			TokenLimit:      rng.Int64N(20) + 1,
			TokensPerPeriod: rng.Int64N(5) + 1,
			Period:          []time.Duration{time.Millisecond, 3 * time.Millisecond, 10 * time.Millisecond}[rng.IntN(3)],
			Continuous:      rng.IntN(2) == 0,
			Unlimited:       rng.IntN(20) == 0,
		}
	}

	pubs := make([]pub, maxEpochs+1)
	pubs[0] = pub{opts: discrete(10, 1, time.Millisecond)}
	l := newBucket(t, pubs[0].opts)

	var (
		clock, epoch, applied atomic.Int64
		wg                    sync.WaitGroup
		stop                  = make(chan struct{})
		grants                = make([][]grant, workers)
		cancels               atomic.Int64
		refusals              atomic.Int64
		attempts              atomic.Int64
	)

	updaterDone := make(chan struct{})
	go func() {
		defer close(updaterDone)
		defer close(stop)
		for e, seen := 1, int64(0); e <= maxEpochs; {
			// Pace time with the traffic: each step waits for about one
			// attempt per worker.
			for attempts.Load() < seen+workers {
				runtime.Gosched()
			}
			seen = attempts.Load()
			now := clock.Add(rand.Int64N(maxStepNano))
			if rand.IntN(4) == 0 {
				o := randomOptions()
				prev := pubs[e-1]
				origin := prev.origin
				if o.Period != prev.opts.Period || o.TokensPerPeriod != prev.opts.TokensPerPeriod || o.Continuous != prev.opts.Continuous {
					origin = now
				}
				pubs[e] = pub{opts: o, at: now, origin: origin}
				epoch.Store(int64(e)) // publish the log entry before the change
				if err := l.Update(t0.Add(time.Duration(now)), o); err != nil {
					panic(err)
				}
				applied.Store(int64(e))
				e++
			}
		}
	}()

	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 7))
			for {
				select {
				case <-stop:
					return
				default:
				}
				a0 := int(applied.Load())
				now := t0.Add(time.Duration(clock.Load()))
				n := int64(1 + r.IntN(2))
				d := l.TryAcquire(now, n)
				e1 := int(epoch.Load())
				attempts.Add(1)
				runtime.Gosched() // let the updater keep pace
				if !d.Granted {
					refusals.Add(1)
					continue
				}
				if r.IntN(4) == 0 {
					l.Cancel(now, n) // undone at once, as the kernel does
					cancels.Add(1)
					continue
				}
				grants[w] = append(grants[w], grant{a0, e1, n})
			}
		}()
	}
	<-updaterDone
	wg.Wait()

	last := int(epoch.Load())
	end := clock.Load()
	at := func(i int) int64 { // P_i, with P_{last+1} the end of the run
		if i > last {
			return end
		}
		return pubs[i].at
	}

	// refill[i] = refill of config i over (P_i, P_{i+1}]; prefix sums.
	prefix := make([]*big.Rat, last+2)
	unlimitedBefore := make([]int, last+2)
	prefix[0] = new(big.Rat)
	for i := 0; i <= last; i++ {
		p := pubs[i]
		var r *big.Rat
		if p.opts.Continuous {
			r = big.NewRat((at(i+1)-at(i))*p.opts.TokensPerPeriod, int64(p.opts.Period))
		} else {
			period := int64(p.opts.Period)
			r = ratInt(((at(i+1)-p.origin)/period - (at(i)-p.origin)/period) * p.opts.TokensPerPeriod)
		}
		prefix[i+1] = new(big.Rat).Add(prefix[i], r)
		unlimitedBefore[i+1] = unlimitedBefore[i]
		if p.opts.Unlimited {
			unlimitedBefore[i+1]++
		}
	}

	// count[a][e]: units granted with a0 == a and e1 == e.
	count := make([][]int64, last+1)
	for i := range count {
		count[i] = make([]int64, last+1)
	}
	var total int64
	for _, gs := range grants {
		for _, g := range gs {
			count[g.a0][g.e1] += g.n
			total += g.n
		}
	}

	var checked, tight int
	colSum := make([]int64, last+1) // sum over a0 >= j of count[a0][e]
	for j := last; j >= 0; j-- {
		for e := range colSum {
			colSum[e] += count[j][e]
		}
		var admitted int64
		for k := j; k <= last; k++ {
			admitted += colSum[k]
			if unlimitedBefore[k+1]-unlimitedBefore[j] > 0 {
				continue
			}
			bound := new(big.Rat).Sub(prefix[k+1], prefix[j])
			bound.Add(bound, ratInt(pubs[j].opts.TokenLimit))
			checked++
			if ratInt(admitted).Cmp(bound) > 0 {
				t.Errorf("free burst: %d units granted by configs %d..%d (instants %v..%v), bound %v (capacity %d + refill)",
					admitted, j, k, time.Duration(at(j)), time.Duration(at(k+1)), bound.FloatString(2), pubs[j].opts.TokenLimit)
				return
			}
			if ratInt(admitted*10).Cmp(new(big.Rat).Mul(bound, ratInt(8))) >= 0 {
				tight++
			}
		}
	}
	t.Logf("granted %d units (%d cancels, %d refusals) over %v and %d publications; %d windows checked, %d within 80%% of their bound",
		total, cancels.Load(), refusals.Load(), time.Duration(end), last, checked, tight)
	require.Positive(t, last, "some publications happened")
	require.Positive(t, refusals.Load(), "the bucket was under pressure")
	require.Positive(t, tight, "some windows were close to their bound")
}
