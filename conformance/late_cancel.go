package conformance

import (
	"fmt"
	"strings"
	"time"

	"pgregory.net/rapid"

	"github.com/sluicerpc/sluice/spi"
)

// checkLateCancelNeverLoosens proves that a Cancel that arrives late, after
// calls at later instants but carrying the instant of its grant (as the
// kernel's Permit.ReleaseUnused sends it for a request refused after
// policy admission), gives back no more than the grant's absence would
// have left the limiter holding (see spi.Limiter.Cancel). Rate kinds only:
// for a concurrency kind, whose Cancel is a Release whatever the instants,
// it passes at once.
//
// The check is differential. L and M are twins: the same kind, built with
// the same parameters at the same instant, and driven with explicit
// instants. It relies on rate kinds being deterministic: given the same
// calls at the same instants, two limiters decide the same. Where the
// twins are given the same calls and decide differently, the check fails
// and says that the kind is not deterministic, which it requires. A
// property (see lateCancel) draws:
//
//  1. a prefix of identical calls on both twins: time advancing by
//     fractions and multiples of Tick, grants, grants cancelled at once,
//     Reconfigure; both must decide the same;
//  2. at T1, L alone takes g units, 1 <= g <= Snapshot().Available; M is
//     from then on what L would be without that grant;
//  3. a middle at instants >= T1, on both twins alike but for the grant:
//     time advancing within a tick or by whole ticks (so that the window
//     or period that counted the grant can pass, and a bucket can fill up
//     to its capacity), Snapshot on both then a grant of at most what L's
//     says is available, on L and on M (M holds at least what L holds, so
//     it must grant it too), such grants from late callers at instants in
//     (T1, now], and Reconfigure of both to the same parameters at the
//     same instant (another limit, or the other cadence); half the
//     middles end with a Reconfigure and grants soon after it, and a
//     quarter of the runs have no middle, so that T2 == T1 (the
//     all-or-nothing undo). The middle cancels nothing and asks L only
//     for what it has available: a kind may give back less than it
//     could, and a refusal of L that M grants takes from M, and either
//     way M would hold less than the grant's absence leaves, failing an
//     L that is exact (a run in which L refuses what its Snapshot offered
//     and M grants it ends there, without a verdict);
//  4. at T2 = now, L.Cancel(T1, g);
//  5. both are drained, one unit at a time until refused, at T2 and at
//     three later instants, advanced equally.
//
// Cumulatively since the Cancel, L must never have granted more than M: a
// Cancel that gives back units into a window or period that did not count
// them, after the bucket was full since the grant, above the capacity, or
// more than the clamps since the grant would have kept, shows as L
// granting more than M. Giving back less, or nothing, is too strict, which
// the contract allows: L granting less than M passes.
func checkLateCancelNeverLoosens(t tb, h LimiterHarness) {
	if h.Capabilities().Class != spi.ClassRate {
		t.Logf("only for rate kinds: a concurrency kind's Cancel is a Release, whatever the instants")
		return
	}
	rapid.Check(t, func(rt *rapid.T) { lateCancel(rt, h) })
}

// notDeterministic is the end of every message about twins that were given
// the same calls and decided differently.
const notDeterministic = "the kind is not deterministic (given the same calls at the same instants, two limiters must decide the same), which LateCancelNeverLoosens requires"

// lateCancel is one run of checkLateCancelNeverLoosens.
func lateCancel(rt *rapid.T, h LimiterHarness) {
	caps := h.Capabilities()
	paramsOf := func(alt bool, limit int64) spi.Params {
		if alt {
			return caps.AltParams(limit)
		}
		return caps.Params(limit)
	}
	limit := rapid.Int64Range(1, 8).Draw(rt, "limit")
	alt := false
	now := start
	l := newLimiter(rt, h, caps.Params(limit), now)
	m := newLimiter(rt, h, caps.Params(limit), now)

	// calls records what both twins were given, for the failure messages.
	var calls []string
	logf := func(format string, args ...any) {
		calls = append(calls, fmt.Sprintf("%v: ", instant(now))+fmt.Sprintf(format, args...))
	}
	trace := func() string { return "\n  calls: " + strings.Join(calls, "\n         ") }
	advance := func(label string, minQuarters, maxQuarters int64) {
		quarters := rapid.Int64Range(minQuarters, maxQuarters).Draw(rt, label)
		jitter := rapid.Int64Range(-1, 1).Draw(rt, label+"Jitter")
		if d := caps.Tick*time.Duration(quarters)/4 + time.Duration(jitter); d > 0 {
			now = now.Add(d)
		}
	}
	same := func(a, b spi.Decision) bool {
		return a.Granted == b.Granted && a.Hint == b.Hint && a.RetryAt.Equal(b.RetryAt)
	}
	// both gives the same TryAcquire to both twins, which must decide the
	// same.
	both := func(at time.Time, n int64, what string) bool {
		dl, dm := l.TryAcquire(at, n), m.TryAcquire(at, n)
		logf("%sTryAcquire(%v, %d) on both: %s", what, instant(at), n, decision(dl))
		if !same(dl, dm) {
			rt.Fatalf("at %v the twins, given the same calls, decided TryAcquire(%d) differently: L %s, M %s: %s%s",
				instant(at), n, decision(dl), decision(dm), notDeterministic, trace())
		}
		return dl.Granted
	}
	reconfigureBoth := func() {
		newLimit := rapid.Int64Range(1, 8).Draw(rt, "reconfigure")
		if caps.AltParams != nil && rapid.Bool().Draw(rt, "switchCadence") {
			alt = !alt
		}
		limit = newLimit
		p := paramsOf(alt, limit)
		reconfigure(rt, l, p, now)
		reconfigure(rt, m, p, now)
		logf("Reconfigure(%v) on both", p)
	}

	// 1. The prefix: identical calls on both.
	for range rapid.IntRange(0, 8).Draw(rt, "prefix") {
		switch rapid.IntRange(0, 3).Draw(rt, "prefixOp") {
		case 0:
			advance("prefixAdvance", 0, 12)
		case 1:
			both(now, rapid.Int64Range(1, 3).Draw(rt, "prefixAcquire"), "")
		case 2:
			n := rapid.Int64Range(1, 3).Draw(rt, "prefixAcquireCancel")
			if both(now, n, "undone at once: ") {
				l.Cancel(now, n)
				m.Cancel(now, n)
			}
		case 3:
			if caps.ReconfigureLimit {
				reconfigureBoth()
			}
		}
	}

	// 2. At T1, L alone takes g units.
	t1 := now
	sl, sm := l.Snapshot(t1), m.Snapshot(t1)
	if sl != sm {
		rt.Fatalf("at %v the twins, given the same calls, report different snapshots: L %+v, M %+v: %s%s",
			instant(t1), sl, sm, notDeterministic, trace())
	}
	if sl.Available <= 0 {
		return // nothing to grant at T1: this run proves nothing
	}
	g := rapid.Int64Range(1, sl.Available).Draw(rt, "g")
	if d := l.TryAcquire(t1, g); !d.Granted {
		rt.Fatalf("at %v, Snapshot().Available = %d but TryAcquire(%d) was refused (%s)%s", instant(t1), sl.Available, g, decision(d), trace())
	}
	logf("T1: TryAcquire(%d) on L alone: granted", g)

	// 3. The middle, at instants >= T1. M holds at least what L holds, so
	// it must grant whatever L grants. mirror asks both twins for their
	// Snapshot at at, takes from both at most what L has available (so
	// that L grants, and both twins see the same calls), and reports
	// whether the run must end: L refused and M granted, so M now holds
	// less than the grant's absence would have left.
	mirror := func(at time.Time, label, what string) (end bool) {
		sl, sm := l.Snapshot(at), m.Snapshot(at)
		if sl.Available <= 0 {
			logf("%sSnapshot(%v) on both: L has nothing available, M %d", what, instant(at), sm.Available)
			return false
		}
		n := rapid.Int64Range(1, min(3, sl.Available)).Draw(rt, label)
		dl, dm := l.TryAcquire(at, n), m.TryAcquire(at, n)
		switch {
		case dl.Granted && dm.Granted:
			logf("%sTryAcquire(%v, %d) on L and M: granted", what, instant(at), n)
		case dl.Granted:
			rt.Fatalf("at %v L granted %d units but its twin M, which did not take the %d units L took at T1 = %v and was given "+
				"every other call of L, refused them (%s): a grant made room for later ones, or %s%s",
				instant(at), n, g, instant(t1), decision(dm), notDeterministic, trace())
		case !dm.Granted:
			logf("%sTryAcquire(%v, %d) on L and M: %s, %s (L's Snapshot said %d available)", what, instant(at), n, decision(dl), decision(dm), sl.Available)
		default:
			return true
		}
		return false
	}
	middle := 0
	if rapid.IntRange(0, 3).Draw(rt, "hasMiddle") > 0 {
		middle = rapid.IntRange(1, 24).Draw(rt, "middle")
	}
	for range middle {
		switch rapid.IntRange(0, 8).Draw(rt, "middleOp") {
		case 0:
			advance("middleFraction", 1, 3) // within a tick
		case 1, 8:
			ticks := rapid.Int64Range(1, 6).Draw(rt, "middleTicks")
			advance("middleTicksAdvance", 4*ticks, 4*ticks) // past windows and periods
		case 2, 3, 7:
			if mirror(now, "middleAcquire", "") {
				return
			}
		case 4:
			// A caller that read the clock after T1 arrives late.
			if span := now.Sub(t1); span > 1 {
				late := time.Duration(rapid.Int64Range(0, int64(min(span-1, caps.Tick))).Draw(rt, "late"))
				if mirror(now.Add(-late), "lateAcquire", "a late ") {
					return
				}
			}
		case 5, 6:
			if caps.ReconfigureLimit {
				reconfigureBoth()
			}
		}
	}
	// Half the middles end with a Reconfigure and grants soon after, so
	// that the Cancel meets the state just after a change (the kernel
	// publishes changes while requests are in flight).
	if middle > 0 && caps.ReconfigureLimit && rapid.Bool().Draw(rt, "endWithReconfigure") {
		reconfigureBoth()
		for range rapid.IntRange(1, 3).Draw(rt, "afterReconfigure") {
			if rapid.Bool().Draw(rt, "afterReconfigureAdvance") {
				advance("afterReconfigureAdvance", 1, 3)
			}
			if mirror(now, "afterReconfigureAcquire", "") {
				return
			}
		}
	}

	// 4. The late Cancel, with the grant's instant.
	t2 := now
	l.Cancel(t1, g)
	logf("T2: Cancel(%v, %d) on L", instant(t1), g)

	// 5. Drain both at T2 and later: L must never get more than M.
	var gotL, gotM int64
	for i := range 4 {
		if i > 0 {
			advance("drainAdvance", 1, 16)
		}
		a, b := drain(rt, l, now, 1<<10), drain(rt, m, now, 1<<10)
		gotL, gotM = gotL+a, gotM+b
		logf("drained: %d units from L, %d from M", a, b)
		if gotL > gotM {
			rt.Fatalf("a Cancel at the grant's instant gave back more than the grant's absence would have left: "+
				"L granted g = %d units at T1 = %v and Cancel(T1, %d) gave them back at T2 = %v; since then, by %v, L granted %d units "+
				"and its twin M, which never took them and was given every other call of L, %d%s",
				g, instant(t1), g, instant(t2), instant(now), gotL, gotM, trace())
		}
	}
}

// decision describes d for a trace.
func decision(d spi.Decision) string {
	switch {
	case d.Granted:
		return "granted"
	case d.Hint == spi.HintAt:
		return "refused until " + instant(d.RetryAt)
	}
	return "refused, hint " + d.Hint.String()
}
