package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sluicerpc/sluice/kernel"
	"github.com/sluicerpc/sluice/limiters/tokenbucket"
	"github.com/sluicerpc/sluice/spi"
)

// bucket is a Global token bucket of the rate phase: continuous refill of
// PerSecond tokens per second, capacity TokenLimit. Every grant takes one
// token.
type bucket struct {
	TokenLimit int64
	PerSecond  int64
}

func (b bucket) spec() spi.Spec {
	return tokenbucket.ContinuousSpec(b.TokenLimit, b.PerSecond, time.Second)
}

func (b bucket) String() string { return fmt.Sprintf("%d/s burst %d", b.PerSecond, b.TokenLimit) }

// rateGlobal is the Global concurrency limit during the rate phase: high
// enough that the workers could go well above every rate of the phase, so
// that the bucket is what limits them.
const rateGlobal = 8

// rateConfig is the candidate of the rate phase in Go (see demoConfig):
// the Global concurrency limit and the bucket b, and the wide queue (a
// request refused by the bucket waits for its retry time, up to the queue
// delay).
func rateConfig(b bucket) kernel.Options {
	o := demoConfig(rateGlobal, queueWide, 0)
	o.Global.Limits = append(o.Global.Limits, b.spec())
	return o
}

// rateStep is one step of the rate phase: publish the bucket, then print a
// row per window for RateStep.
type rateStep struct {
	name string
	b    bucket
	note string
}

var rateSteps = []rateStep{
	{"9a rate 200/s burst=20", bucket{TokenLimit: 20, PerSecond: 200},
		fmt.Sprintf("global=%d + Global token bucket, continuous; a new bucket starts full", rateGlobal)},
	{"9b lower 50/s burst=5", bucket{TokenLimit: 5, PerSecond: 50},
		"the tokens left are carried over, capped at 5"},
	{"9c raise 300/s burst=30", bucket{TokenLimit: 30, PerSecond: 300},
		"a raised tokenLimit is not refilled: no burst"},
}

// rateWindows is how many rows each rate step prints.
const rateWindows = 4

// ratePhase runs steps 9a to 9c: each publishes a bucket onto the running
// workload, prints its row, then one row per window with the rate admitted
// in that window. The sampler is quiet meanwhile.
func (d *demo) ratePhase(ctx context.Context) error {
	d.rateRows.Store(true)
	defer d.rateRows.Store(false)
	for i, s := range rateSteps {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("interrupted before step %q: %w", s.name, err)
		}
		d.errs.stepStarts(s.name)
		d.step = s.name
		b := s.b
		if err := d.apply(demoDoc{Global: rateGlobal, Queue: queueWide, Rate: &b}, i > 0); err != nil {
			return fmt.Errorf("step %q: %w", s.name, err)
		}
		t0 := time.Now()
		from, count, rated := t0, d.admitted.Load(), d.obs.rateGrantCount()
		d.tl.row(d.snapshot(d.k.Stats(), s.name, s.note))
		for w := 1; w <= rateWindows; w++ {
			sleepCtx(ctx, time.Until(t0.Add(time.Duration(w)*d.opts.rateWindow())))
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("interrupted in step %q: %w", s.name, err)
			}
			now, n, r := time.Now(), d.admitted.Load(), d.obs.rateGrantCount()
			rate := float64(n-count) / now.Sub(from).Seconds()
			note := fmt.Sprintf("admitted %4.0f/s  bucket %3d/s  %s", rate, s.b.PerSecond, rateBar(rate, s.b.PerSecond))
			if i == 0 && w == 1 {
				// Grants in the window by programs without the bucket
				// (waiters of the previous program). Approximate: a
				// grant is recorded under the bucket just before it is
				// counted as admitted.
				note += fmt.Sprintf("  (the new bucket's %d tokens; %d grants by the previous program)",
					s.b.TokenLimit, max(int64(n-count)-int64(r-rated), 0))
			}
			d.tl.row(d.snapshot(d.k.Stats(), "", note))
			from, count, rated = now, n, r
		}
	}
	return nil
}

// rateBar draws rate with one '#' per whole 10/s up to limit and one '+'
// per whole 10/s above it.
func rateBar(rate float64, limit int64) string {
	const perChar, maxChars = 10, 60
	n := min(int(rate/perChar), maxChars)
	l := int(limit / perChar)
	if n <= l {
		return strings.Repeat("#", max(n, 0))
	}
	return strings.Repeat("#", l) + strings.Repeat("+", n-l)
}

// rateReport is the result of the rate check.
type rateReport struct {
	Grants int   // grants by programs with a Global bucket
	Over   int64 // rate_over: the largest excess of grants over a bound
	// Margin is the least, over every family and every grant, of the
	// bound less the count: -Over when negative, else how close the
	// grants came to a bound (0 without grants).
	Margin int64
	// Detail describes the point of the largest excess or, with none, the
	// point closest to its bound.
	Detail string
}

// rateCheck checks the recorded grants against a bound that a token bucket
// that is correct, and reconfigured without a free burst, cannot exceed.
//
// A run is a maximal sequence of epochs i..j whose programs all carry the
// Global bucket. The kernel continues the same bucket across such epochs
// (same kind: reconfigured in place), and every grant by generation i..j
// takes one token of it at an instant after T_i, the kernel's publication of
// epoch i (a program is captured only once published, and the bucket is
// created or reconfigured at T_i, between begun_i and done_i). So, for every
// epoch i of a run (family i: the grants by generations i..j), and every t:
//
//	grants of family i by t <= carried_i + supply_i(t)
//
// carried_i is what the bucket can hold just after T_i: a new bucket (first
// epoch of a run) starts full, L_i; a continued one carries at most what it
// had, which is at most its previous capacity, capped at the new one:
// min(L_i-1, L_i). A reconfiguration never adds tokens (a raised capacity
// is not refilled), so after T_i the bucket gains at most the rate in
// force: supply_i(t) is the integral from begun_i (<= T_i) to t of r_k
// between done_k and begun_k+1, and of max(r_k-1, r_k) while publication k
// is in flight (between begun_k and done_k either rate may apply), with the
// last rate of the run continuing after it (later programs no longer bind
// the bucket; nothing reconfigures it). Grants are stamped after Admit
// returned, so the grants stamped by t all happened by t: counting them can
// only make the count smaller. The kernel's clock is monotonic time in this
// process, like the stamps, and a limiter that receives times slightly out
// of order must stay on the strict side, so its refill is never more than
// the real time elapsed. The bound is therefore sound: a correct kernel
// never exceeds it, whatever the timing, and rate_over is 0. It is also
// tight when the workers keep the bucket empty: a free refill at a change
// (L_i tokens at a raise instead of at most min(L_i-1, L_i)) shows at once
// in family i, an over-rate grant anywhere shows in the families before
// it. Grants by generations of another run are not counted in family i
// even if they take the same bucket's tokens; that only makes the check
// miss excesses, never invent them.
//
// rate_over is the largest excess, over every family and every t, of the
// count over the bound: the least number of grants that would have to be
// removed for every bound to hold.
func (o *observer) rateCheck() rateReport {
	o.mu.RLock()
	log := slices.Clone(o.log)
	o.mu.RUnlock()
	o.rmu.Lock()
	grants := slices.Clone(o.rateGrants)
	o.rmu.Unlock()
	slices.SortStableFunc(grants, func(a, b rateGrant) int { return a.at.Compare(b.at) })

	type point struct {
		margin, n, bound int64
		i, j             int
		after            time.Duration
	}
	var worst *point
	for i := 1; i < len(log); i++ {
		if log[i].rate == nil {
			continue
		}
		j := i
		for j+1 < len(log) && log[j+1].rate != nil {
			j++
		}
		carried := log[i].rate.TokenLimit
		if prev := log[i-1].rate; prev != nil {
			carried = min(prev.TokenLimit, carried)
		}
		var n int64
		for _, g := range grants {
			if g.gen < uint64(i) || g.gen > uint64(j) {
				continue
			}
			n++
			bound := carried + supply(log, i, j, g.at)
			if m := bound - n; worst == nil || m < worst.margin {
				worst = &point{margin: m, n: n, bound: bound, i: i, j: j, after: g.at.Sub(log[i].begun)}
			}
		}
	}

	rep := rateReport{Grants: len(grants)}
	if worst != nil {
		rep.Margin = worst.margin
	}
	switch {
	case worst == nil:
		rep.Detail = "no grant under a Global token bucket"
	case worst.margin < 0:
		rep.Over = -worst.margin
		rep.Detail = fmt.Sprintf("%d over: %d grants by generations %d..%d within %.3fs of publishing %s (generation %d), at most %d possible",
			rep.Over, worst.n, worst.i, worst.j, worst.after.Seconds(), log[worst.i].rate, worst.i, worst.bound)
	default:
		rep.Detail = fmt.Sprintf("closest approach %d below the bound: %d grants by generations %d..%d within %.3fs of publishing %s (generation %d), bound %d",
			worst.margin, worst.n, worst.i, worst.j, worst.after.Seconds(), log[worst.i].rate, worst.i, worst.bound)
	}
	return rep
}

// supply is the whole number of tokens that the bucket of the run i..j can
// gain from begun_i to t, at most (see rateCheck).
func supply(log []epochEntry, i, j int, t time.Time) int64 {
	var s tokenSum
	for k := i; k <= j; k++ {
		e := log[k]
		end := t // the last rate of the run goes on
		if k < j && log[k+1].begun.Before(t) {
			end = log[k+1].begun
		}
		from := e.begun
		if k > i {
			// Publication k in flight: either rate may apply. Not known
			// to have returned: for the whole epoch.
			done := e.done
			if done.IsZero() || done.After(end) {
				done = end
			}
			s.add(max(log[k-1].rate.PerSecond, e.rate.PerSecond), from, done)
			from = done
		}
		s.add(e.rate.PerSecond, from, end)
	}
	return s.whole
}

// tokenSum adds rate × duration exactly: whole tokens and billionths.
type tokenSum struct{ whole, nano int64 }

func (s *tokenSum) add(perSecond int64, from, to time.Time) {
	if !to.After(from) {
		return
	}
	d := to.Sub(from)
	s.whole += perSecond * int64(d/time.Second)
	s.nano += perSecond * int64(d%time.Second)
	s.whole += s.nano / int64(time.Second)
	s.nano %= int64(time.Second)
}
