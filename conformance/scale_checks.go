package conformance

import (
	"fmt"
	"math"
	"time"

	"github.com/sluicerpc/sluice/spi"
)

// checkLimitsAtEveryScale runs one fixed script at the limits 1, 2 and 7
// and at every large limit the kind accepts (hundreds, thousands, the
// 32-bit edges, 2^53 and the int64 edge, as far as its Validate goes, and
// its largest limit): one unit, then requests of the whole limit, of what
// is left and of math.MaxInt64 (whose sum with anything held wraps), many
// units given back at once, a shrink below what is held (concurrency), and
// Snapshot after every step. It is deterministic: a kind whose arithmetic
// breaks at a scale (a limit kept in 32 bits, a sum that wraps, tokens
// compared in float64, a bulk path off by one) fails it every run.
func checkLimitsAtEveryScale(t tb, h LimiterHarness) {
	limits := append([]int64{1, 2, 7}, largeLimits(h)...)
	t.Logf("limits: %v", limits)
	for _, limit := range limits {
		var ok bool
		if h.Capabilities().Class == spi.ClassConcurrency {
			ok = concurrencyAtScale(t, h, limit)
		} else {
			ok = rateAtScale(t, h, limit)
		}
		if !ok {
			return
		}
	}
}

// concurrencyAtScale is checkLimitsAtEveryScale's script for a concurrency
// kind at limit; it reports whether every step held.
func concurrencyAtScale(t tb, h LimiterHarness, limit int64) bool {
	t.Helper()
	var zero time.Time
	caps := h.Capabilities()
	l := newLimiter(t, h, caps.Params(limit), zero)
	held, ok := int64(0), true
	expect := func(step string) {
		t.Helper()
		want := spi.Snapshot{Kind: h.Kind().Name(), Limit: limit, InUse: held, Available: max(limit-held, 0)}
		if s := l.Snapshot(zero); s != want && ok {
			t.Errorf("%v, after %s: Snapshot() = %+v, want %+v (spi.Snapshot: InUse is what is held, Available what TryAcquire can grant)",
				caps.Params(limit), step, s, want)
			ok = false
		}
	}
	try := func(n int64) {
		t.Helper()
		if n < 1 {
			return
		}
		d := l.TryAcquire(zero, n)
		fit := fits(held, n, limit)
		switch {
		case d.Granted && !fit:
			t.Errorf("limit %d, %d held: TryAcquire(%d) was granted (spi.Limiter: a concurrency limiter never holds more than its limit)", limit, held, n)
			ok = false
		case d.Granted:
			held += n
		case fit:
			t.Errorf("limit %d, %d held: TryAcquire(%d) was refused with %+v, but it fits", limit, held, n, d)
			ok = false
		case n > limit && d.Hint != spi.HintNever:
			t.Errorf("limit %d: TryAcquire(%d) above the limit was refused with %v, want HintNever", limit, n, d.Hint)
			ok = false
		case n <= limit && d.Hint != spi.HintOnRelease:
			t.Errorf("limit %d, %d held: TryAcquire(%d) was refused with %v, want HintOnRelease", limit, held, n, d.Hint)
			ok = false
		}
		expect(fmt.Sprintf("TryAcquire(%d)", n))
	}
	giveBack := func(n int64, cancel bool) {
		t.Helper()
		if cancel {
			l.Cancel(zero, n)
		} else {
			l.Release(zero, n)
		}
		held -= n
		expect(fmt.Sprintf("giving back %d at once", n))
	}
	try(1)
	try(math.MaxInt64)
	try(limit)
	try(limit - 1)
	try(1)
	try(math.MaxInt64)
	if held > 1 {
		giveBack(held-1, false)
	}
	giveBack(held, true)
	try(limit)
	if ok && caps.ReconfigureLimit && limit > 1 {
		// Shrink below what is held, give back down to the new limit: still
		// nothing fits; give back the rest: the new limit fits at once.
		shrunk := limit / 2
		reconfigure(t, l, caps.Params(shrunk), zero)
		limit = shrunk
		expect(fmt.Sprintf("a shrink to %d with %d held", shrunk, held))
		try(1)
		giveBack(held-shrunk, false)
		try(1)
		giveBack(held, false)
		try(shrunk)
	}
	if held > 0 {
		giveBack(held, false)
	}
	return ok
}

// rateAtScale is checkLimitsAtEveryScale's script for a rate kind at limit,
// every call at the instant of New (so nothing refills); it reports
// whether every step held.
func rateAtScale(t tb, h LimiterHarness, limit int64) bool {
	t.Helper()
	caps := h.Capabilities()
	now := start
	l := newLimiter(t, h, caps.Params(limit), now)
	avail, ok := limit, true // a fresh rate limiter starts full (spi.LimiterKind.New)
	expect := func(step string) {
		t.Helper()
		s := l.Snapshot(now)
		switch {
		case !ok:
		case s.Kind != h.Kind().Name() || s.Limit != limit || s.Available != avail:
			t.Errorf("limit %d, after %s: Snapshot() = %+v, want Kind %q, Limit %d, Available %d",
				limit, step, s, h.Kind().Name(), limit, avail)
			ok = false
		case s.InUse <= 0 && avail != limit:
			t.Errorf("limit %d, after %s: Snapshot() = %+v: an InUse of %d says the limiter is at rest, but %d units are taken "+
				"(spi.Snapshot.InUse: a rate limiter whose InUse is 0 or less must behave from now on exactly as a fresh limiter, which is full)",
				limit, step, s, s.InUse, limit-avail)
			ok = false
		}
	}
	try := func(n int64) {
		t.Helper()
		if n < 1 {
			return
		}
		d := l.TryAcquire(now, n)
		switch {
		case d.Granted && n > avail:
			t.Errorf("limit %d, %d available: TryAcquire(%d) was granted (spi.Limiter: a rate limiter never grants more than it has)", limit, avail, n)
			ok = false
		case d.Granted:
			avail -= n
		case n <= avail:
			t.Errorf("limit %d, %d available: TryAcquire(%d) was refused with %+v", limit, avail, n, d)
			ok = false
		case n > limit && d.Hint != spi.HintNever:
			t.Errorf("limit %d: TryAcquire(%d) above the limit was refused with %v, want HintNever", limit, n, d.Hint)
			ok = false
		case n <= limit && (d.Hint != spi.HintAt || !d.RetryAt.After(now)):
			t.Errorf("limit %d, %d available: TryAcquire(%d) was refused with %+v, want HintAt after now", limit, avail, n, d)
			ok = false
		}
		expect(fmt.Sprintf("TryAcquire(%d)", n))
	}
	expect("New")
	try(1)
	try(math.MaxInt64)
	try(limit)
	try(limit - 1)
	try(1)
	if taken := limit - avail; taken > 1 {
		// A Cancel at once gives back exactly what it took.
		l.Cancel(now, taken-1)
		avail += taken - 1
		expect(fmt.Sprintf("a Cancel at once of %d", taken-1))
		try(avail + 1)
		try(avail)
	}
	return ok
}
