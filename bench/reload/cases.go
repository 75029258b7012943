package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/sluicerpc/sluice/limiters/tokenbucket"
	"github.com/sluicerpc/sluice/limiters/window"
)

// Case is one line of the experiment: a system, the way its users change
// a limit, and the no-free-burst bound of the first second after the
// change.
type Case struct {
	System string // "x-time-rate", "sentinel-golang", "sluice"
	Name   string
	// Bound is the most the system may admit in [P, P+1s) without a free
	// burst: what the new configuration allows there, starting from the
	// state the old configuration carried to P. (The interval starts at P,
	// so the old configuration contributes only through that state.) Each
	// is derived from first principles in the comment at its case, from
	// the greedy traffic of Drive: at every 1 ms tick, admissions until
	// one is refused.
	Bound int64
	// Build makes the subject at T0 on the simulated clock.
	Build func(*Clock) (Subject, error)
}

// Key is "<system>/<case>".
func (c Case) Key() string { return c.System + "/" + c.Name }

// MustHold reports whether the case must print EXTRA 0: sluice's cases
// are the claim under test; the others are measurements of peers.
func (c Case) MustHold() bool { return c.System == "sluice" }

// The drained state at P, shared by the derivations below (P = T0 + 2.5 s):
//
//   - a token bucket of 100/s, burst 100, starts full: 100 grants at T0,
//     then one every 10 ms; the last before P is at P-10ms, so at P it
//     holds exactly 1 token;
//   - a 100-per-second window (fixed, sliding, or sentinel's statistic)
//     grants 100 at T0 + k s, the start of each second, when the previous
//     second's 100 stop counting, and nothing else; at P the 100 taken at
//     T0+2s = P-500ms still count, and they stop counting at T0+3s =
//     P+500ms (a fixed window [T0+2s, T0+3s) ends; in a sliding window
//     of 1 s they leave it).
//
// Measured ticks are P, P+1ms, ..., P+999ms.
var cases = []Case{
	{
		// Replaced by rate.NewLimiter(200, 200). Bound: from the carried
		// 1 token, 200/s refills 1 token per 5 ms: 1 at P, then
		// P+5ms ... P+995ms, 199 more: 200. The new limiter starts full,
		// 200 at P, then the same 199: 399.
		System: "x-time-rate", Name: "new-limiter", Bound: 200,
		Build: xNewLimiter(xBucket{100, 100}, xBucket{200, 200}),
	},
	{
		// SetLimitAt(P, 200), SetBurstAt(P, 200) on the same limiter.
		// Bound as for new-limiter: 200.
		System: "x-time-rate", Name: "setlimit-setburst", Bound: 200,
		Build: xSetLimitBurst(xBucket{100, 100}, xBucket{200, 200}),
	},
	{
		// 100/s burst 100 until T0+1s (drained as above), then
		// SetLimitAt(T0+1s, rate.Inf), the traffic takes everything it
		// asks for (MaxAttemptsPerTick a tick) until P, then
		// SetLimitAt(P, 100), SetBurstAt(P, 100). Bound: the traffic
		// emptied the bucket at P-1ms (every attempt was granted), so it
		// holds less than 1 token at P (what 1 ms of refill can add), and
		// 100/s refills at most 99.9 tokens by P+999ms: 100 at most.
		System: "x-time-rate", Name: "inf-to-finite", Bound: 100,
		Build: xInfToFinite(xBucket{100, 100}, time.Second, xBucket{100, 100}),
	},
	{
		// Flow rule threshold 100 replaced by flow.LoadRules with
		// threshold 200. Sentinel's statistic is a 1 s window of two
		// 500 ms buckets aligned to Unix milliseconds, hence to T0; the
		// measured second [P, P+1s) is exactly the buckets [P, P+500ms)
		// and [P+500ms, P+1s), one statistic window. Bound: the window at
		// P holds the 100 of bucket [T0+2s, P): 100 more at P; at P+500ms
		// that bucket leaves the window: 100 more; 200 (no 200-per-window
		// limit admits more than 200 in one window anyway).
		System: "sentinel-golang", Name: "loadrules", Bound: 200,
		Build: sentinelLoadRules(100, 200),
	},
	{
		// Continuous token bucket 100/s, 100 tokens -> 200/s, 200 tokens.
		// Bound as for x-time-rate/setlimit-setburst: 1 carried token at
		// P, then one per 5 ms, P+5ms ... P+995ms: 200.
		System: "sluice", Name: "tokenbucket-raise", Bound: 200,
		Build: sluiceUpdate(tokenbucket.ContinuousSpec(100, 100, time.Second), tokenbucket.ContinuousSpec(200, 200, time.Second)),
	},
	{
		// -> 50/s, 50 tokens. Bound: the 1 carried token at P (the new
		// capacity of 50 keeps it), then one per 20 ms, P+20ms ...
		// P+980ms, 49 more: 50.
		System: "sluice", Name: "tokenbucket-lower", Bound: 50,
		Build: sluiceUpdate(tokenbucket.ContinuousSpec(100, 100, time.Second), tokenbucket.ContinuousSpec(50, 50, time.Second)),
	},
	{
		// Fixed window 100 per 1 s -> 200 per 1 s. Windows start at
		// T0 + k s, so P is in the middle of [T0+2s, T0+3s), which holds
		// 100. Bound: 100 more in the current window (at P), then 200 in
		// the next one, which starts at P+500ms: 300.
		System: "sluice", Name: "fixedwindow-raise", Bound: 300,
		Build: sluiceUpdate(window.FixedSpec(100, time.Second), window.FixedSpec(200, time.Second)),
	},
	{
		// Sliding window 100 per 1 s, 10 segments of 100 ms -> 200 per
		// 1 s, 10 segments. Bound: the window at P holds the 100 taken at
		// P-500ms: 100 more at P; at P+500ms those leave the window: 100
		// more; the 100 taken at P leave only at P+1s: 200 (no 200-per-
		// second sliding window admits more than 200 in one second).
		System: "sluice", Name: "slidingwindow-raise", Bound: 200,
		Build: sluiceUpdate(window.SlidingSpec(100, time.Second, 10), window.SlidingSpec(200, time.Second, 10)),
	},
	{
		// Sliding window 100 per 1 s, 10 segments -> 100 per 500 ms, 10
		// segments of 50 ms (a window change: sluice cannot map the old
		// segments onto the new ones and carries them as a barrier).
		// Bound, read as generously as the new configuration permits: the
		// 100 units taken at P-500ms, in the new window's terms, leave a
		// 500 ms window at P, so 100 at P; those leave at P+500ms, so 100
		// more: 200. (A stricter reading keeps the old units until they
		// leave the old window, P+500ms: 100. Sluice's barrier does that;
		// the design accepts too strict for a while, never too loose.)
		System: "sluice", Name: "slidingwindow-resize", Bound: 200,
		Build: sluiceUpdate(window.SlidingSpec(100, time.Second, 10), window.SlidingSpec(100, 500*time.Millisecond, 10)),
	},
	{
		// Algorithm replaced: continuous token bucket 100/s, 100 tokens
		// -> sliding window 100 per 1 s, 10 segments. Bound: a 100-per-
		// second sliding window admits at most 100 in any second,
		// whatever it carries, and the old bucket would also have allowed
		// only 1 + 99 = 100 in [P, P+1s): 100. (Sluice hands the bucket's
		// debt, 99 units, to the window as a barrier until P+1s, so it
		// admits 1. A window rebuilt empty at P would also admit only 100
		// here: this case cannot tell carrying from resetting; the
		// token bucket and fixed window cases can.)
		System: "sluice", Name: "replace-tokenbucket-by-slidingwindow", Bound: 100,
		Build: sluiceUpdate(tokenbucket.ContinuousSpec(100, 100, time.Second), window.SlidingSpec(100, time.Second, 10)),
	},
	{
		// Disable at P, the old program reclaimed (no request holds it),
		// then Enable with the same continuous token bucket 100/s, 100
		// tokens. Bound: disabled for no time at all, so the bucket's
		// state at P carries: 1 token at P, then one per 10 ms,
		// P+10ms ... P+990ms, 99 more: 100. A bucket rebuilt full at P
		// would admit 100 at P and the same 99: 199.
		System: "sluice", Name: "disable-enable-rate", Bound: 100,
		Build: sluiceDisableEnable(tokenbucket.ContinuousSpec(100, 100, time.Second)),
	},
}

// Outcome is a case and what it measured.
type Outcome struct {
	Case
	Result
}

// Extra is the number of admissions above the bound: max(0, admitted -
// bound).
func (o Outcome) Extra() int64 { return max(0, o.Admitted-o.Bound) }

// Line is the case's output line.
func (o Outcome) Line() string {
	s := fmt.Sprintf("EXTRA %s %d  admitted=%d bound=%d", o.Key(), o.Extra(), o.Admitted, o.Bound)
	if o.Saturated {
		s += " saturated"
	}
	return s
}

// Run builds c on a fresh simulated clock, drives it and closes it.
func Run(c Case) (Outcome, error) {
	clock := NewClock()
	s, err := c.Build(clock)
	if err != nil {
		return Outcome{}, fmt.Errorf("%s: %w", c.Key(), err)
	}
	r, err := Drive(clock, s)
	if s.Close != nil {
		err = errors.Join(err, s.Close())
	}
	if err != nil {
		return Outcome{}, fmt.Errorf("%s: %w", c.Key(), err)
	}
	return Outcome{Case: c, Result: r}, nil
}
