package conformance

import (
	"fmt"
	"math"
	"time"

	"github.com/sluicerpc/sluice/spi"
)

// clockSequence gives the instant of the i-th call of a script.
type clockSequence struct {
	name string
	at   func(i int) time.Time
}

// concurrencyClocks are the instants checkConcurrencyIgnoresTime gives a
// concurrency limiter: a kind must decide the same whatever they are
// (spi.ClassConcurrency: a concurrency limiter ignores the time).
var concurrencyClocks = []clockSequence{
	{"the zero time at every call", func(int) time.Time { return time.Time{} }},
	{"an hour later at every call", func(i int) time.Time { return start.Add(time.Duration(i) * time.Hour) }},
	{"a day earlier at every call", func(i int) time.Time { return start.Add(-time.Duration(i) * 24 * time.Hour) }},
	{"minutes apart, every third a step back", func(i int) time.Time {
		return start.Add(time.Duration(i)*7*time.Minute - time.Duration(i%3)*11*time.Minute)
	}},
	{"alternating between the extremes time.Time holds", func(i int) time.Time {
		return []time.Time{time.Unix(math.MinInt64, 0), time.Unix(math.MaxInt64, 999_999_999), {}}[i%3]
	}},
}

// checkConcurrencyIgnoresTime runs one script of acquisitions, releases,
// cancels and reconfigurations (single units and many at once) on a
// concurrency limiter under each of concurrencyClocks, and requires every
// decision and every Snapshot to be the model's: held units against the
// limit in force, whatever the instants. A kind that credits or debits by
// time (leases that expire, a refusal when the clock goes backwards, a
// decay) fails it. Rate kinds pass at once.
func checkConcurrencyIgnoresTime(t tb, h LimiterHarness) {
	requireClass(t, h, spi.ClassConcurrency)
	caps := h.Capabilities()
	type step struct {
		op string // "acquire", "release", "cancel", "reconfigure"
		n  int64
	}
	script := []step{
		{"acquire", 2}, {"acquire", 3}, {"acquire", 1}, {"release", 1}, {"acquire", 1},
		{"acquire", 1}, {"release", 4}, {"acquire", 4}, {"cancel", 2}, {"reconfigure", 3},
		{"acquire", 1}, {"release", 3}, {"acquire", 1}, {"reconfigure", 6}, {"acquire", 6},
		{"acquire", 3}, {"release", 5}, {"cancel", 1}, {"acquire", 6}, {"release", 6},
	}
	for _, clock := range concurrencyClocks {
		limit, held := int64(5), int64(0)
		l := newLimiter(t, h, caps.Params(limit), clock.at(0))
		for i, s := range script {
			at := clock.at(i + 1)
			what := fmt.Sprintf("with %s, step %d (%s %d at %s)", clock.name, i+1, s.op, s.n, instant(at))
			switch s.op {
			case "acquire":
				d := l.TryAcquire(at, s.n)
				if fit := fits(held, s.n, limit); d.Granted != fit {
					t.Errorf("%s: limit %d, %d held: TryAcquire(%d) = %+v, want granted %v "+
						"(spi.ClassConcurrency: a concurrency limiter ignores the time it is given)", what, limit, held, s.n, d, fit)
					return
				}
				if d.Granted {
					held += s.n
				}
			case "release", "cancel":
				n := min(s.n, held)
				if n == 0 {
					continue
				}
				if s.op == "release" {
					l.Release(at, n)
				} else {
					l.Cancel(at, n)
				}
				held -= n
			case "reconfigure":
				if !caps.ReconfigureLimit {
					continue
				}
				limit = s.n
				reconfigure(t, l, caps.Params(limit), at)
			}
			want := spi.Snapshot{Kind: h.Kind().Name(), Limit: limit, InUse: held, Available: max(limit-held, 0)}
			if got := l.Snapshot(clock.at(i + 2)); got != want {
				t.Errorf("%s: Snapshot() = %+v, want %+v (spi.ClassConcurrency: a concurrency limiter ignores the time it is given)", what, got, want)
				return
			}
		}
		if held > 0 {
			l.Release(clock.at(len(script)+2), held)
		}
	}
}

// lateness are how late checkLateCallersStrict's callers arrive, in ticks
// (quarters of one): within one, one exactly and a nanosecond more, several
// windows or periods, a hundred.
var lateness = []time.Duration{2, 4, 5, 8, 16, 400}

// checkLateCallersStrict drains a rate limiter at an instant now, then
// sends it callers that read the clock earlier and arrive late: by half a
// tick, a tick, several ticks, a hundred, three in a row each earlier than
// the last (time going backwards), single units and many. A limiter with
// nothing available at now must refuse them all (spi.Limiter: a late
// caller is counted on the strict side, never granted more because it is
// late). Then it and a twin that never saw them are drained alike at later
// instants: the late callers must not have given it more (a late caller
// that rewinds what was credited gets it credited again). Under Params and
// AltParams. Concurrency kinds pass at once.
func checkLateCallersStrict(t tb, h LimiterHarness) {
	requireClass(t, h, spi.ClassRate)
	caps := h.Capabilities()
	const limit = 4
	for _, c := range cadencesOf(caps) {
		for _, late := range lateness {
			p := c.params(limit)
			l := newLimiter(t, h, p, start)
			m := newLimiter(t, h, p, start)
			now := start.Add(caps.Tick*10 + caps.Tick/3)
			for _, x := range []spi.Limiter{l, m} {
				drain(t, x, start, limit)
				drain(t, x, now, limit+caps.Allowance(p, start, now))
			}
			at := now
			for i, n := range []int64{1, 3, limit} {
				at = at.Add(-caps.Tick * late / 4)
				if d := l.TryAcquire(at, n); d.Granted {
					t.Errorf("%s %v: drained at %v, a caller %d tick-quarters late (caller %d, at %v) was granted %d units "+
						"(spi.Limiter: a late caller is counted on the strict side, never granted more because it is late)",
						c.name, p, instant(now), late*time.Duration(i+1), i+1, instant(at), n)
					return
				}
			}
			var gotL, gotM int64
			for q := time.Duration(1); q <= 12; q++ {
				later := now.Add(caps.Tick * q / 4)
				gotL += drain(t, l, later, 1<<20)
				gotM += drain(t, m, later, 1<<20)
				if gotL > gotM {
					t.Errorf("%s %v: after late callers (%d tick-quarters apart, refused) the limiter granted %d units by %v, "+
						"a twin that never saw them %d (spi.Limiter: a refusal consumes nothing and a late caller never makes room)",
						c.name, p, late, gotL, instant(later), gotM)
					return
				}
			}
		}
	}
}

// driftTicks is how long checkNoDrift runs, in ticks: tens of thousands
// of windows or refill periods. driftBudget bounds the wall-clock time of
// each run: in process 20,000 ticks take tens of milliseconds, through the
// plugin bridge, where every call is an RPC, the run stops at the budget
// and logs how far it got (the clock bounds the effort, never the verdict).
const (
	driftTicks  = 20_000
	driftBudget = 3 * time.Second
)

// driftSteps are checkNoDrift's steps, in thirteenths of a tick: uneven,
// so that calls land at every phase of the cadence, and none longer than a
// tick, so that every window and period is drained and the units granted
// stay within the Allowance's rounding of the bound.
var driftSteps = []time.Duration{4, 7, 13, 3, 9, 1, 12, 5}

// checkNoDrift runs a rate limiter of limit 3 for driftTicks ticks under
// Params and AltParams, calling it at uneven steps of a fraction of a tick
// and taking everything it grants at each, and requires the units granted
// since New never to exceed the limit plus Allowance(p, start, now). A
// window or period whose length is rounded (a binary fraction of a
// second, a length shaved to stay clear of the boundary) gains a fraction
// of a window at every one, invisible in the other checks' few dozen
// ticks; over tens of thousands it adds up to more than the Allowance's
// rounding. Deterministic. Concurrency kinds pass at once.
func checkNoDrift(t tb, h LimiterHarness) {
	requireClass(t, h, spi.ClassRate)
	caps := h.Capabilities()
	for _, c := range cadencesOf(caps) {
		name := c.name
		const limit = 3
		p := c.params(limit)
		l := newLimiter(t, h, p, start)
		now, end := start, start.Add(caps.Tick*driftTicks)
		var granted, calls int64
		began := time.Now()
		for i := 0; now.Before(end); i++ {
			if i%256 == 0 && time.Since(began) > driftBudget {
				t.Logf("%s %v: stopped after %v at %.0f ticks of %d (each call is slow here)",
					name, p, driftBudget, float64(now.Sub(start))/float64(caps.Tick), driftTicks)
				break
			}
			now = now.Add(caps.Tick * driftSteps[i%len(driftSteps)] / 13)
			bound := satAdd(limit, caps.Allowance(p, start, now))
			for calls++; l.TryAcquire(now, 1).Granted; calls++ {
				if granted++; granted > bound {
					t.Errorf("%s %v: %d units granted from New at start to %v (%.1f ticks), at most %d allowed "+
						"(limit %d + Allowance): the cadence drifts (spi.Limiter: no capacity that the parameters do not allow)",
						name, p, granted, instant(now), float64(now.Sub(start))/float64(caps.Tick), bound, limit)
					return
				}
			}
		}
		t.Logf("%s %v: %d units granted in %.0f ticks, %d calls", name, p, granted, float64(now.Sub(start))/float64(caps.Tick), calls)
	}
}

// cadence is one of a rate kind's parameter families: Params, or AltParams.
type cadence struct {
	name   string
	params func(int64) spi.Params
}

// cadencesOf returns Params, and AltParams when the kind has it.
func cadencesOf(caps LimiterCapabilities) []cadence {
	cs := []cadence{{"Params", caps.Params}}
	if caps.AltParams != nil {
		cs = append(cs, cadence{"AltParams", caps.AltParams})
	}
	return cs
}
