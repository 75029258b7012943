package tokenbucket_test

import (
	"math/big"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/sluicerpc/sluice/limiters/tokenbucket"
	"github.com/sluicerpc/sluice/spi"
)

// TestMatchesTheModel drives a Limiter and the reference model through the
// same random sequences of time advances, acquisitions, cancellations (at
// the instant of the grant, as the kernel does), reconfigurations (both
// modes, unlimited on and off), invalid reconfigurations and algorithm
// replacements (Seal, then Inherit into a fresh bucket at the same instant,
// as the kernel does). Every decision, refusal hint, snapshot and handed
// over usage must be the model's, and the no-free-burst checker must accept
// the admitted traffic.
func TestMatchesTheModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) { runStateMachine(t, drawSmallOptions) })
}

// TestMatchesTheModelAtExtremeRates is the same with capacities and rates
// up to MaxTokenLimit per microsecond: the credit clock outgrows a config
// within a second, so the limiter keeps rebuilding its config under the
// sequence, which must not show.
func TestMatchesTheModelAtExtremeRates(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) { runStateMachine(t, drawExtremeOptions) })
}

func drawSmallOptions(t *rapid.T, label string) tokenbucket.Options {
	periods := []time.Duration{time.Microsecond, 7 * time.Microsecond, time.Millisecond, 3 * time.Millisecond,
		10 * time.Millisecond, 100 * time.Millisecond, 333333333, time.Second}
	return tokenbucket.Options{
		TokenLimit:      rapid.Int64Range(1, 12).Draw(t, label+" tokenLimit"),
		TokensPerPeriod: rapid.Int64Range(1, 5).Draw(t, label+" tokensPerPeriod"),
		Period:          rapid.SampledFrom(periods).Draw(t, label+" period"),
		Continuous:      rapid.Bool().Draw(t, label+" continuous"),
		Unlimited:       rapid.IntRange(0, 4).Draw(t, label+" unlimited") == 0,
	}
}

func drawExtremeOptions(t *rapid.T, label string) tokenbucket.Options {
	limit := rapid.SampledFrom([]int64{1_000_000, 999_983, tokenbucket.MaxTokenLimit}).Draw(t, label+" tokenLimit")
	return tokenbucket.Options{
		TokenLimit:      limit,
		TokensPerPeriod: rapid.SampledFrom([]int64{limit, limit / 3, 999_983}).Draw(t, label+" tokensPerPeriod"),
		Period:          rapid.SampledFrom([]time.Duration{time.Microsecond, 3 * time.Microsecond, time.Millisecond}).Draw(t, label+" period"),
		Continuous:      rapid.Bool().Draw(t, label+" continuous"),
		Unlimited:       rapid.IntRange(0, 4).Draw(t, label+" unlimited") == 0,
	}
}

func runStateMachine(t *rapid.T, draw func(*rapid.T, string) tokenbucket.Options) {
	o := draw(t, "initial")
	now := t0
	l, err := tokenbucket.New(o, now)
	if err != nil {
		t.Fatal(err)
	}
	m := newModel(o, now)
	chk := newBurstChecker(o, now, ratInt(o.TokenLimit), nil)

	var (
		grantsNow []int64   // grants at the current instant, which Cancel may undo
		lastHint  time.Time // the latest refusal's retry time
	)
	requireSnapshot := func(t *rapid.T, when time.Time) {
		if want, got := m.snapshot(when), l.Snapshot(when); got != want {
			t.Fatalf("Snapshot(%v) = %+v, model %+v", when.Sub(t0), got, want)
		}
	}
	advance := func(d time.Duration) {
		t.Logf("advance %v", d)
		now = now.Add(d)
		grantsNow = nil
	}

	t.Repeat(map[string]func(*rapid.T){
		"advance": func(t *rapid.T) {
			p := m.opts.Period
			switch rapid.IntRange(0, 3).Draw(t, "advance kind") {
			case 0:
				advance(time.Duration(rapid.Int64Range(1, 1000).Draw(t, "ns")))
			case 1:
				advance(time.Duration(rapid.Int64Range(1, 3*int64(p)).Draw(t, "up to 3 periods")))
			case 2:
				advance(time.Duration(rapid.Int64Range(1, int64(2*time.Second)).Draw(t, "up to 2s")))
			case 3:
				advance(p - now.Sub(m.origin)%p) // to the next boundary
			}
		},
		"advance to the last hint": func(t *rapid.T) {
			if !lastHint.After(now) {
				t.Skip("no hint ahead")
			}
			early := time.Duration(rapid.Int64Range(0, 1).Draw(t, "ns early"))
			advance(lastHint.Add(-early).Sub(now))
		},
		"acquire": func(t *rapid.T) {
			n := rapid.Int64Range(1, m.opts.TokenLimit+1).Draw(t, "n")
			want := m.tryAcquire(now, n)
			got := l.TryAcquire(now, n)
			t.Logf("acquire %d at %v: %+v", n, now.Sub(t0), got)
			if got != want {
				t.Fatalf("TryAcquire(%v, %d) = %+v, model %+v (options %+v)", now.Sub(t0), n, got, want, m.opts)
			}
			if got.Granted {
				grantsNow = append(grantsNow, n)
				chk.admit(t, now, n)
			}
			if got.Hint == spi.HintAt {
				lastHint = got.RetryAt
			}
		},
		"cancel": func(t *rapid.T) {
			if len(grantsNow) == 0 {
				t.Skip("no grant at this instant")
			}
			i := rapid.IntRange(0, len(grantsNow)-1).Draw(t, "grant")
			n := grantsNow[i]
			grantsNow = append(grantsNow[:i], grantsNow[i+1:]...)
			t.Logf("cancel %d at %v", n, now.Sub(t0))
			l.Cancel(now, n)
			m.cancel(now, n)
			chk.cancel(now, n, m.opts.Unlimited)
		},
		"reconfigure": func(t *rapid.T) {
			next := draw(t, "reconfigure")
			m.advance(now)
			before := new(big.Rat).Set(m.tokens)
			old := m.opts
			if err := l.Reconfigure(now, next.Params()); err != nil {
				t.Fatalf("Reconfigure(%+v): %v", next, err)
			}
			m.reconfigure(now, next)
			t.Logf("reconfigure at %v to %+v: model tokens %v", now.Sub(t0), next, m.tokens)
			chk.checkCarried(t, now, before, m.tokens, old, next)
			origin := chk.origin
			if old.Period != next.Period || old.TokensPerPeriod != next.TokensPerPeriod || old.Continuous != next.Continuous {
				origin = now
			}
			chk = newBurstChecker(next, origin, m.tokens, m.barriers)
			chk.pub = now
		},
		"reconfigure invalid": func(t *rapid.T) {
			p := m.opts.Params()
			switch rapid.IntRange(0, 3).Draw(t, "invalid") {
			case 0:
				p[tokenbucket.ParamTokenLimit] = 0
			case 1:
				p[tokenbucket.ParamPeriod] = 999
			case 2:
				p["burst"] = 1
			case 3:
				p[tokenbucket.ParamUnlimited] = 2
			}
			before := l.Snapshot(now)
			if err := l.Reconfigure(now, p); err == nil {
				t.Fatalf("Reconfigure(%v) succeeded", p)
			}
			if got := l.Snapshot(now); got != before || l.Options() != m.opts {
				t.Fatalf("a rejected Reconfigure changed the limiter: %+v -> %+v", before, got)
			}
		},
		"replace": func(t *rapid.T) {
			usage := l.Seal(now)
			want := m.seal(now)
			if !equalUsage(usage, want) {
				t.Fatalf("Seal(%v) = %+v, model %+v", now.Sub(t0), usage, want)
			}
			if d := l.TryAcquire(now, 1); d != never {
				t.Fatalf("TryAcquire after Seal = %+v", d)
			}
			l.Cancel(now, 1)
			requireSnapshot(t, now)

			next := draw(t, "replacement")
			l, err = tokenbucket.New(next, now)
			if err != nil {
				t.Fatal(err)
			}
			l.Inherit(now, usage)
			t.Logf("replace at %v: usage %v, new %+v", now.Sub(t0), usage, next)
			m = newModel(next, now)
			m.inherit(now, usage)
			var units int64
			for _, u := range usage {
				units += u.Units
			}
			if limit := ratInt(next.TokenLimit - units); m.tokens.Cmp(limit) > 0 {
				t.Fatalf("inherited bucket holds %v, more than tokenLimit %d less the %d units handed over", m.tokens, next.TokenLimit, units)
			}
			chk = newBurstChecker(next, now, m.tokens, m.barriers)
			grantsNow = nil
		},
		"": func(t *rapid.T) {
			requireSnapshot(t, now)
			if l.Options() != m.opts {
				t.Fatalf("Options = %+v, model %+v", l.Options(), m.opts)
			}
		},
	})
}

func equalUsage(a, b []spi.Usage) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Units != b[i].Units || !a[i].Until.Equal(b[i].Until) {
			return false
		}
	}
	return true
}

// burstChecker checks "no free burst" on the admitted traffic itself,
// independently of how the bucket computes: from the publication instant P
// of the options in force (a reconfiguration or an inheritance), with the
// tokens carried over at P,
//
//  1. the units admitted in [P, t] never exceed carried(P) + refill(P, t),
//  2. the units admitted in [a, t], for every grant instant a >= P, never
//     exceed cap(a) + refill(a, t): the bucket held at most its cap
//     (tokenLimit less the barriers active at a) just before a,
//
// where refill is computed here from the options and the phase the package
// promises (a cadence change restarts the period at P), and cancellations
// count as negative grants. The checks are skipped while unlimited.
// checkCarried checks the publication itself: the carried tokens are no
// more than the old bucket held just before P, and no more than the new
// capacity.
type burstChecker struct {
	opts     tokenbucket.Options
	origin   time.Time // discrete boundaries are origin + k·period
	pub      time.Time
	carried  *big.Rat
	barriers []spi.Usage
	events   []admission
}

type admission struct {
	at time.Time
	n  int64
}

func newBurstChecker(o tokenbucket.Options, now time.Time, carried *big.Rat, barriers []spi.Usage) *burstChecker {
	return &burstChecker{opts: o, origin: now, pub: now, carried: new(big.Rat).Set(carried), barriers: append([]spi.Usage(nil), barriers...)}
}

func (c *burstChecker) refill(a, b time.Time) *big.Rat {
	if !a.Before(b) {
		return new(big.Rat)
	}
	if c.opts.Continuous {
		r := new(big.Rat).Mul(ratInt(int64(b.Sub(a))), ratInt(c.opts.TokensPerPeriod))
		return r.Quo(r, ratInt(int64(c.opts.Period)))
	}
	boundaries := int64(b.Sub(c.origin)/c.opts.Period) - int64(a.Sub(c.origin)/c.opts.Period)
	return new(big.Rat).Mul(ratInt(boundaries), ratInt(c.opts.TokensPerPeriod))
}

func (c *burstChecker) capAt(t time.Time) int64 {
	limit := c.opts.TokenLimit
	for _, b := range c.barriers {
		if t.Before(b.Until) {
			limit -= b.Units
		}
	}
	return limit
}

func (c *burstChecker) admit(t *rapid.T, now time.Time, n int64) {
	c.events = append(c.events, admission{now, n})
	if c.opts.Unlimited {
		return
	}
	var total int64
	for _, e := range c.events {
		total += e.n
	}
	if bound := new(big.Rat).Add(c.carried, c.refill(c.pub, now)); ratInt(total).Cmp(bound) > 0 {
		t.Fatalf("free burst: %d units admitted in [%v, %v], but %v were carried and %v refilled",
			total, c.pub.Sub(t0), now.Sub(t0), c.carried, c.refill(c.pub, now))
	}
	var since int64
	for i := len(c.events) - 1; i >= 0; i-- {
		since += c.events[i].n
		a := c.events[i].at
		if i > 0 && c.events[i-1].at.Equal(a) {
			continue // a is the first grant at its instant
		}
		if bound := new(big.Rat).Add(ratInt(c.capAt(a)), c.refill(a, now)); ratInt(since).Cmp(bound) > 0 {
			t.Fatalf("free burst: %d units admitted in [%v, %v], but the bucket held at most %d then and %v refilled",
				since, a.Sub(t0), now.Sub(t0), c.capAt(a), c.refill(a, now))
		}
	}
}

func (c *burstChecker) cancel(now time.Time, n int64, unlimited bool) {
	if !unlimited {
		c.events = append(c.events, admission{now, -n})
	}
}

func (c *burstChecker) checkCarried(t *rapid.T, now time.Time, before, after *big.Rat, old, next tokenbucket.Options) {
	if !old.Unlimited {
		var total int64
		for _, e := range c.events {
			total += e.n
		}
		held := new(big.Rat).Add(c.carried, c.refill(c.pub, now))
		held.Sub(held, ratInt(total))
		if before.Cmp(held) > 0 {
			t.Fatalf("the bucket held %v at %v, more than carried %v + refill %v - admitted %d", before, now.Sub(t0), c.carried, c.refill(c.pub, now), total)
		}
	}
	if after.Cmp(before) > 0 || after.Cmp(ratInt(next.TokenLimit)) > 0 {
		t.Fatalf("publication at %v carried %v tokens: the bucket held %v, the new capacity is %d", now.Sub(t0), after, before, next.TokenLimit)
	}
}
