package conformance

import (
	"fmt"
	"math"
	"math/big"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"pgregory.net/rapid"

	"github.com/sluicerpc/sluice/spi"
)

// checkNeverAboveLimitConcurrently proves that concurrent callers never get
// more than the limit, while another goroutine keeps reconfiguring it, and
// that no update is lost. For concurrency kinds: eight goroutines at a
// fixed limit, the duels at limits 1 and 4 (see edgeDuel, slackDuel), then
// eight goroutines while another one reconfigures; every grant is checked
// against the highest limit in force and, once known to bind, against the
// limit in force (see limitWatch), and after every round Snapshot().InUse
// must equal what the goroutines hold. For rate kinds, see
// neverAboveLimitConcurrentlyRate, then the same duels at one instant. It
// catches check-then-act races and lost updates without -race (see the
// racing checks in race.go); under -race it also catches data races.
func checkNeverAboveLimitConcurrently(t tb, h LimiterHarness) {
	caps := h.Capabilities()
	if caps.Class == spi.ClassRate {
		if neverAboveLimitConcurrentlyRate(t, h) && edgeDuel(t, h) {
			slackDuel(t, h)
		}
		return
	}
	if !crowdPhase(t, h, false) || !edgeDuel(t, h) || !slackDuel(t, h) {
		return
	}
	if caps.ReconfigureLimit {
		crowdPhase(t, h, true)
	}
}

// neverAboveLimitConcurrentlyRate: at one instant nothing refills
// (Allowance(p, t, t) is 0), so concurrent acquirers on a fresh rate limiter
// must together get no more than it had available, plus, for kinds whose
// raise frees units, the raises that a concurrent Reconfigure made. It runs
// trials for crowdBudget, and at least 50.
func neverAboveLimitConcurrentlyRate(t tb, h LimiterHarness) bool {
	ok := true
	raceFor(crowdBudget, 50, func(int) bool {
		ok = rateTrial(t, h)
		return ok
	})
	return ok
}

// rateTrial is one trial of neverAboveLimitConcurrentlyRate, on a fresh
// limiter with all acquirers released at once; it reports whether the
// trial passed. The end of the quota is where races show, so many short
// trials catch more than one long one.
func rateTrial(t tb, h LimiterHarness) bool {
	t.Helper()
	caps := h.Capabilities()
	const high, low = 8, 6
	now := start
	l := newLimiter(t, h, caps.Params(high), now)
	avail := l.Snapshot(now).Available

	var granted atomic.Int64
	var panicked atomic.Value
	recordPanic := func() {
		if r := recover(); r != nil {
			panicked.CompareAndSwap(nil, fmt.Sprint(r))
		}
	}
	gate := make(chan struct{})
	var wg sync.WaitGroup
	const workers, rounds = 5, 4 // 5 does not divide 8: the acquirers meet the end of the quota out of step
	for range workers {
		wg.Go(func() {
			defer recordPanic()
			<-gate
			for range rounds {
				if l.TryAcquire(now, 1).Granted {
					granted.Add(1)
				}
				runtime.Gosched()
			}
		})
	}
	stop := make(chan struct{})
	var raises atomic.Int64
	var reconfErr atomic.Value
	var rwg sync.WaitGroup
	if caps.ReconfigureLimit {
		rwg.Go(func() {
			defer recordPanic()
			<-gate
			for {
				for _, lim := range []int64{low, high} {
					select {
					case <-stop:
						return
					default:
					}
					if err := l.Reconfigure(now, caps.Params(lim)); err != nil {
						reconfErr.CompareAndSwap(nil, err)
					} else if lim == high {
						raises.Add(1)
					}
					runtime.Gosched()
				}
			}
		})
	}
	close(gate)
	wg.Wait()
	close(stop)
	rwg.Wait()
	ok := true
	if p, _ := panicked.Load().(string); p != "" {
		t.Errorf("a goroutine calling the limiter panicked: %s", p)
		ok = false
	}
	if err, _ := reconfErr.Load().(error); err != nil {
		t.Errorf("Reconfigure: %v", err)
		ok = false
	}
	bound := avail
	if caps.RaiseFreesUnits {
		bound += raises.Load() * (high - low)
	}
	if g := granted.Load(); g > bound {
		t.Errorf("concurrent acquirers got %d units at one instant; %d were available (and %d raises)", g, avail, raises.Load())
		ok = false
	}
	return ok
}

// checkNoFreeBurst is a property over random sequences of advance-time,
// acquire, release, cancel and reconfigure, with Snapshot and the refusal
// hints checked after every step. For concurrency kinds every grant must
// leave the held units at or below the limit in force, a request that fits
// must be granted, a refusal must say HintOnRelease (HintNever above the
// limit), and Snapshot must equal the model. For rate kinds, see
// noFreeBurstRate.
func checkNoFreeBurst(t tb, h LimiterHarness) {
	caps := h.Capabilities()
	large := largeLimits(h)
	t.Logf("large limits the kind accepts (drawn one time in three): %v", large)
	if caps.Class == spi.ClassConcurrency {
		rapid.Check(t, func(rt *rapid.T) { noFreeBurstConcurrency(rt, h, large) })
		return
	}
	rapid.Check(t, func(rt *rapid.T) { noFreeBurstRate(rt, h, large) })
}

// noFreeBurstConcurrency: the limit is small or one of the kind's large
// limits (up to its edge), units are taken and given back one to three or
// many at once (up to the whole limit, and requests whose sum with what is
// held overflows int64), and every call carries an unrelated instant (the
// zero time, years apart, backwards as often as forwards), which a
// concurrency limiter must ignore: the model never looks at it.
func noFreeBurstConcurrency(rt *rapid.T, h LimiterHarness, large []int64) {
	caps := h.Capabilities()
	limit := drawLimit(rt, large, "limit")
	l := newLimiter(rt, h, caps.Params(limit), drawAnyTime(rt, "newAt"))
	var held int64
	steps := rapid.IntRange(1, 40).Draw(rt, "steps")
	for range steps {
		at := drawAnyTime(rt, "at")
		switch rapid.IntRange(0, 3).Draw(rt, "op") {
		case 0:
			n := drawUnits(rt, limit, limit-held, "acquire")
			d := l.TryAcquire(at, n)
			switch {
			case d.Granted:
				if !fits(held, n, limit) {
					rt.Fatalf("at %v, granted %d units with %d held and limit %d", instant(at), n, held, limit)
				}
				held += n
			case fits(held, n, limit):
				rt.Fatalf("at %v, refused %d units with %d held and limit %d", instant(at), n, held, limit)
			case n > limit && d.Hint != spi.HintNever:
				rt.Fatalf("at %v, refused %d units above the limit %d with %v, want %v", instant(at), n, limit, d.Hint, spi.HintNever)
			case n <= limit && d.Hint != spi.HintOnRelease:
				rt.Fatalf("at %v, refused %d units with %d held and limit %d with %v, want %v", instant(at), n, held, limit, d.Hint, spi.HintOnRelease)
			}
		case 1, 2:
			if held > 0 {
				n := min(drawUnits(rt, held, held, "giveBack"), held)
				if rapid.Bool().Draw(rt, "cancel") {
					l.Cancel(at, n)
				} else {
					l.Release(at, n)
				}
				held -= n
			}
		case 3:
			if caps.ReconfigureLimit {
				limit = drawLimit(rt, large, "reconfigure")
				reconfigure(rt, l, caps.Params(limit), at)
			}
		}
		at = drawAnyTime(rt, "snapshotAt")
		want := spi.Snapshot{Kind: h.Kind().Name(), Limit: limit, InUse: held, Available: max(limit-held, 0)}
		if s := l.Snapshot(at); s != want {
			rt.Fatalf("at %v, Snapshot() = %+v, want %+v", instant(at), s, want)
		}
	}
	if held > 0 {
		l.Release(drawAnyTime(rt, "lastReleaseAt"), held)
	}
}

// hintHorizon bounds, in ticks, how far a property check follows a retry
// hint: a request for a large share of a large limit can be hinted
// centuries away.
const hintHorizon = 1000

// noFreeBurstRate: from each publication P (New or Reconfigure), the units
// granted at instants in [P, t] must stay within
//
//	min(carried + raise, limit) + Allowance(p, P, t)
//
// where carried bounds what was available just before P: the lesser of
// what the limiter's own Snapshot said and what the previous publication's
// bound leaves (so that a Snapshot that overstates cannot lend a free
// burst credibility), raise is the rise of the limit when RaiseFreesUnits,
// and the whole is capped at the new limit: nothing more than the limit is
// ever available at once. A Reconfigure that refills, resets a window,
// forgets consumption or keeps more than a lowered limit shows up as a
// grant beyond that bound.
//
// Besides, after every step, Snapshot must report the kind, the limit in
// force and an Available within [0, limit] and within the bound; a probe
// takes exactly Snapshot().Available (granted) and one more (refused); a
// refusal above the limit says HintNever, any other HintAt after now, and
// a retry at that RetryAt succeeds; a grant cancelled at once gives back
// exactly what it took; and callers arriving with an earlier now than one
// already seen are granted nothing beyond the same bound (the strict
// side).
func noFreeBurstRate(rt *rapid.T, h LimiterHarness, large []int64) {
	caps := h.Capabilities()
	paramsOf := func(alt bool, limit int64) spi.Params {
		if alt {
			return caps.AltParams(limit)
		}
		return caps.Params(limit)
	}
	limit := drawLimit(rt, large, "limit")
	alt := false
	p := paramsOf(alt, limit)
	now := start
	l := newLimiter(rt, h, p, now)
	// The bound and the units granted since a publication are big
	// integers: at limits near the int64 edge they add up beyond it.
	pubAt, base, since := now, limit, new(big.Int)
	switched := false // a cadence change happened: see case 6
	bound := func() *big.Int {
		a := caps.Allowance(p, pubAt, now)
		if a == math.MaxInt64 {
			return new(big.Int).Lsh(big.NewInt(1), 128) // saturated: no bound
		}
		return new(big.Int).Add(big.NewInt(base), big.NewInt(a))
	}
	left := func() *big.Int { return new(big.Int).Sub(bound(), since) }
	// granted counts a grant of n units made at at (at most now).
	granted := func(n int64, at time.Time, what string) {
		since.Add(since, big.NewInt(n))
		if b := bound(); since.Cmp(b) > 0 {
			rt.Fatalf("free burst: %d units granted in [%v, %v] after publishing %v (the last, %s, at %v), bound %d",
				since, instant(pubAt), instant(now), p, what, instant(at), b)
		}
	}
	acquire := func(n int64, at time.Time, what string) spi.Decision {
		d := l.TryAcquire(at, n)
		switch {
		case d.Granted:
			granted(n, at, what)
		case n > limit && d.Hint != spi.HintNever:
			rt.Fatalf("at %v, %s of %d units above the limit %d was refused with %+v, want HintNever", instant(at), what, n, limit, d)
		case n <= limit && (d.Hint != spi.HintAt || !d.RetryAt.After(at)):
			rt.Fatalf("at %v, %s of %d units (limit %d) was refused with %+v, want HintAt after it", instant(at), what, n, limit, d)
		}
		return d
	}
	steps := rapid.IntRange(1, 40).Draw(rt, "steps")
	for range steps {
		switch rapid.IntRange(0, 6).Draw(rt, "op") {
		case 0:
			quarters := rapid.Int64Range(0, 12).Draw(rt, "advance")
			jitter := rapid.Int64Range(-1, 1).Draw(rt, "jitter")
			d := caps.Tick*time.Duration(quarters)/4 + time.Duration(jitter)
			if d > 0 {
				now = now.Add(d)
			}
		case 1, 2:
			n := drawUnits(rt, limit, limit, "acquire")
			d := acquire(n, now, "TryAcquire")
			if d.Hint == spi.HintAt && d.RetryAt.Sub(now) <= hintHorizon*caps.Tick && rapid.Bool().Draw(rt, "retryAtHint") {
				now = d.RetryAt
				if !l.TryAcquire(now, n).Granted {
					rt.Fatalf("TryAcquire(%d) hinted %v, but a retry then failed: the hint is early", n, instant(now))
				}
				granted(n, now, "retry at the hint")
			}
		case 3:
			// Callers that read the clock earlier arrive late: within a
			// tick or several windows or periods late, one after the
			// other, each earlier than the last (time going backwards).
			at := now
			for range rapid.IntRange(1, 3).Draw(rt, "lateCallers") {
				late := time.Duration(rapid.Int64Range(1, 4*int64(caps.Tick)).Draw(rt, "late"))
				if at = at.Add(-late); at.Before(start) {
					at = start
				}
				acquire(drawUnits(rt, limit, limit, "lateAcquire"), at, "a late TryAcquire")
			}
		case 4:
			// A grant undone at once, as across several limiters.
			n := drawUnits(rt, limit, limit, "acquireCancel")
			if d := acquire(n, now, "TryAcquire then Cancel"); d.Granted {
				l.Cancel(now, n)
				since.Sub(since, big.NewInt(n))
			}
		case 5:
			// Snapshot().Available is exactly what can be taken: one more
			// at once is refused, that many granted, one more refused.
			s := l.Snapshot(now)
			if more := max(s.Available, 0) + 1; s.Available < math.MaxInt64 && acquire(more, now, "Snapshot().Available+1 at once").Granted {
				rt.Fatalf("at %v, Snapshot().Available = %d but TryAcquire of %d at once was granted", instant(now), s.Available, more)
			}
			if s.Available > 0 {
				if !l.TryAcquire(now, s.Available).Granted {
					rt.Fatalf("at %v, Snapshot().Available = %d but TryAcquire of that many was refused", instant(now), s.Available)
				}
				granted(s.Available, now, "Snapshot().Available")
			}
			if l.TryAcquire(now, 1).Granted {
				rt.Fatalf("at %v, Snapshot().Available = %d but one more unit was granted", instant(now), s.Available)
			}
		case 6:
			if !caps.ReconfigureLimit {
				continue
			}
			newLimit := drawLimit(rt, large, "reconfigure")
			if caps.AltParams != nil && rapid.Bool().Draw(rt, "switchCadence") {
				alt = !alt
				switched = true
			}
			if alt && !acceptsParams(h, caps.AltParams, newLimit) {
				// The other cadence need not reach the same limits.
				newLimit = rapid.Int64Range(1, 8).Draw(rt, "reconfigureAlt")
			}
			// Once a cadence change has turned usage into a barrier,
			// what is in use may be freed at the barrier's natural
			// expiry, which no Allowance of the new parameters
			// counts: what was available then includes it.
			pre := l.Snapshot(now)
			avail := max(pre.Available, 0)
			if switched {
				avail = satAdd(avail, max(pre.InUse, 0))
			}
			carried := avail
			if b := left(); b.Cmp(big.NewInt(carried)) < 0 {
				carried = b.Int64()
			}
			if caps.RaiseFreesUnits && newLimit > limit {
				carried = satAdd(carried, newLimit-limit)
			}
			limit, p = newLimit, paramsOf(alt, newLimit)
			reconfigure(rt, l, p, now)
			pubAt, base = now, min(carried, limit)
			since.SetInt64(0)
		}
		s := l.Snapshot(now)
		if s.Kind != h.Kind().Name() || s.Limit != limit || s.Available < 0 || s.Available > limit || s.InUse < 0 {
			rt.Fatalf("at %v, Snapshot() = %+v, want Kind %q, Limit %d, Available in [0, %d], InUse >= 0", instant(now), s, h.Kind().Name(), limit, limit)
		}
		if b := left(); b.Cmp(big.NewInt(s.Available)) < 0 {
			rt.Fatalf("at %v, Snapshot().Available = %d, but at most %d units can be available since the publication of %v at %v",
				instant(now), s.Available, b, p, instant(pubAt))
		}
		// The kernel drops a rate state whose InUse is 0 or less when
		// nothing else needs it, and builds a fresh one, full, when it
		// needs one again (spi.Snapshot.InUse): at rest means full.
		if s.InUse <= 0 && s.Available != limit {
			rt.Fatalf("at %v, Snapshot() = %+v: an InUse of %d says the limiter is at rest and may be replaced by a fresh one, "+
				"which would make %d units available, but it has %d (spi.Snapshot.InUse: a rate limiter whose InUse is 0 or less "+
				"must behave from now on exactly as a fresh limiter)", instant(now), s, s.InUse, limit, s.Available)
		}
	}
}

// checkRaiseNeverRefills proves that raising the limit creates no capacity
// beyond the raise. A concurrency limiter at its limit admits exactly the
// difference; a drained rate limiter admits nothing more at the same
// instant (or at most the raise, for kinds whose raise frees units).
func checkRaiseNeverRefills(t tb, h LimiterHarness) {
	caps := h.Capabilities()
	if !caps.ReconfigureLimit {
		t.Skip("Reconfigure does not change the limit")
	}
	if caps.Class == spi.ClassConcurrency {
		var zero time.Time
		l := newLimiter(t, h, caps.Params(2), zero)
		if got := drain(t, l, zero, 2); got != 2 {
			t.Fatalf("limit 2 granted %d units, want 2", got)
		}
		reconfigure(t, l, caps.Params(5), zero)
		if got := drain(t, l, zero, 5); got != 3 {
			t.Errorf("raising the limit from 2 to 5 with 2 held exposed %d units, want exactly 3", got)
		}
		if s := l.Snapshot(zero); s.Limit != 5 {
			t.Errorf("Snapshot().Limit = %d after the raise, want 5", s.Limit)
		}
		l.Release(zero, 5)
		return
	}
	limit := int64(2)
	l := newLimiter(t, h, caps.Params(limit), start)
	for _, now := range []time.Time{start, start.Add(caps.Tick * 5 / 2)} {
		drain(t, l, now, limit+caps.Allowance(caps.Params(limit), start, now))
		raised := limit + 4
		reconfigure(t, l, caps.Params(raised), now)
		want := int64(0)
		if caps.RaiseFreesUnits {
			want = raised - limit
		}
		if got := drain(t, l, now, raised); got > want {
			t.Errorf("at %v, raising the limit from %d to %d on a drained limiter made %d units available, at most %d allowed",
				instant(now), limit, raised, got, want)
		}
		limit = raised
	}
}

// checkShrinkNeverRevokes proves that lowering a concurrency limit below the
// held units keeps the holders (Snapshot still counts them, and each Release
// is accepted) and admits nobody new until the holders fall below the new
// limit. Concurrency kinds only: a rate limiter holds nothing to revoke.
func checkShrinkNeverRevokes(t tb, h LimiterHarness) {
	requireClass(t, h, spi.ClassConcurrency)
	caps := h.Capabilities()
	if !caps.ReconfigureLimit {
		t.Skip("Reconfigure does not change the limit")
	}
	var zero time.Time
	l := newLimiter(t, h, caps.Params(5), zero)
	if got := drain(t, l, zero, 5); got != 5 {
		t.Fatalf("limit 5 granted %d units, want 5", got)
	}
	reconfigure(t, l, caps.Params(2), zero)
	for held := int64(5); held > 0; held-- {
		if s := l.Snapshot(zero); s.InUse != held {
			t.Errorf("with %d held after shrinking to 2, Snapshot().InUse = %d", held, s.InUse)
		}
		if held >= 2 {
			if l.TryAcquire(zero, 1).Granted {
				t.Fatalf("with %d held and limit 2, a unit was granted", held)
			}
		}
		l.Release(zero, 1)
	}
	if got := drain(t, l, zero, 2); got != 2 {
		t.Errorf("after every holder left, limit 2 granted %d units, want 2", got)
	}
	l.Release(zero, 2)
}

// checkExactlyOnceRelease proves that giving back a unit twice either panics
// or leaves the accounting intact: afterwards the limiter admits no more
// than its limit. The kernel never does it, but a limiter that credits the
// second Release (or Cancel) turns one caller bug into permanent
// over-admission.
func checkExactlyOnceRelease(t tb, h LimiterHarness) {
	caps := h.Capabilities()
	const limit = 3
	now := start
	if caps.Class == spi.ClassConcurrency {
		now = time.Time{}
	}
	l := newLimiter(t, h, caps.Params(limit), now)
	giveBacks := []struct {
		name string
		f    func(n int64)
	}{
		{"Cancel", func(n int64) { l.Cancel(now, n) }},
	}
	if caps.Class == spi.ClassConcurrency {
		giveBacks = append(giveBacks, struct {
			name string
			f    func(n int64)
		}{"Release", func(n int64) { l.Release(now, n) }})
	}
	for _, g := range giveBacks {
		if !l.TryAcquire(now, 1).Granted {
			t.Fatalf("a fresh limiter with limit %d refused one unit", limit)
		}
		g.f(1)
		panicked := releaseSafely(func() { g.f(1) })
		t.Logf("second %s panicked: %v", g.name, panicked)
		if s := l.Snapshot(now); s.InUse < 0 || s.Available > limit {
			t.Errorf("after a double %s, Snapshot() = %+v", g.name, s)
		}
		got := drain(t, l, now, limit+1)
		if got > limit {
			t.Errorf("after a double %s, the limiter granted %d units at once, limit %d", g.name, got, limit)
		}
		if caps.Class == spi.ClassConcurrency {
			l.Release(now, got)
		} else {
			l.Cancel(now, got)
		}
	}
}

// checkCountersBackToZero proves that once every granted unit is given back
// the limiter reports nothing in use and its whole limit available, so no
// unit leaks: for concurrency kinds after Release and Cancel in any order,
// for rate kinds after Cancel at the instant of the grant.
func checkCountersBackToZero(t tb, h LimiterHarness) {
	caps := h.Capabilities()
	const limit = 8
	now := start
	if caps.Class == spi.ClassConcurrency {
		now = time.Time{}
	}
	l := newLimiter(t, h, caps.Params(limit), now)
	sizes := []int64{1, 3, 2, 1}
	for _, n := range sizes {
		if !l.TryAcquire(now, n).Granted {
			t.Fatalf("refused %d units below the limit", n)
		}
	}
	for i, n := range []int64{2, 1, 1, 3} {
		if i%2 == 0 || caps.Class == spi.ClassRate {
			l.Cancel(now, n)
		} else {
			l.Release(now, n)
		}
	}
	s := l.Snapshot(now)
	if s.InUse != 0 || s.Available != limit {
		t.Errorf("after giving back every unit, Snapshot() = %+v, want InUse 0 and Available %d", s, limit)
	}
	if got := drain(t, l, now, limit); got != limit {
		t.Errorf("after giving back every unit, the limiter granted %d units, want %d", got, limit)
	}
}

// checkSnapshotConsistent proves that Snapshot tells the truth: Kind and
// Limit match the configuration, InUse is what is held (concurrency), and
// Available is exactly what TryAcquire can take at that instant, no more
// and no less; and that it still does after Reconfigure lowers, raises or
// (rate kinds with AltParams) re-cadences the limiter.
func checkSnapshotConsistent(t tb, h LimiterHarness) {
	caps := h.Capabilities()
	const limit = 5
	if caps.Class == spi.ClassConcurrency {
		var zero time.Time
		l := newLimiter(t, h, caps.Params(limit), zero)
		expect := func(limit, held int64, when string) {
			t.Helper()
			want := spi.Snapshot{Kind: h.Kind().Name(), Limit: limit, InUse: held, Available: max(limit-held, 0)}
			if s := l.Snapshot(zero); s != want {
				t.Errorf("%s, Snapshot() = %+v, want %+v", when, s, want)
			}
		}
		for held := int64(0); held <= limit; held++ {
			expect(limit, held, fmt.Sprintf("with %d held", held))
			if held < limit && !l.TryAcquire(zero, 1).Granted {
				t.Fatalf("refused a unit with %d held, limit %d", held, limit)
			}
		}
		if l.TryAcquire(zero, 1).Granted {
			t.Errorf("granted a unit above the limit")
		}
		l.Release(zero, limit-3)
		if !caps.ReconfigureLimit {
			l.Release(zero, 3)
			return
		}
		// With 3 held: raise, shrink below the held units, release.
		reconfigure(t, l, caps.Params(7), zero)
		expect(7, 3, "with 3 held after a raise to 7")
		reconfigure(t, l, caps.Params(2), zero)
		expect(2, 3, "with 3 held after a shrink to 2")
		l.Release(zero, 2)
		expect(2, 1, "with 1 held after a shrink to 2")
		if !l.TryAcquire(zero, 1).Granted {
			t.Fatalf("refused a unit with 1 held, limit 2")
		}
		expect(2, 2, "with 2 held after a shrink to 2")
		l.Release(zero, 2)
		expect(2, 0, "with nothing held after a shrink to 2")
		return
	}
	l := newLimiter(t, h, caps.Params(limit), start)
	// exact checks Snapshot at now against the limit in force, then takes
	// exactly Snapshot().Available.
	exact := func(now time.Time, limit int64, when string) {
		t.Helper()
		s := l.Snapshot(now)
		if s.Kind != h.Kind().Name() || s.Limit != limit || s.Available < 0 || s.Available > limit {
			t.Errorf("at %v%s, Snapshot() = %+v, want Kind %q, Limit %d, Available in [0, %d]",
				instant(now), when, s, h.Kind().Name(), limit, limit)
			return
		}
		if s.Available > 0 && !l.TryAcquire(now, s.Available).Granted {
			t.Errorf("at %v%s, Snapshot().Available = %d but TryAcquire of that many was refused", instant(now), when, s.Available)
		}
		if l.TryAcquire(now, 1).Granted {
			t.Errorf("at %v%s, Snapshot().Available = %d but one more unit was granted", instant(now), when, s.Available)
		}
		if s := l.Snapshot(now); s.Available != 0 {
			t.Errorf("at %v%s, after taking everything, Snapshot().Available = %d, want 0", instant(now), when, s.Available)
		}
	}
	for _, q := range []time.Duration{0, 1, 3, 4, 6, 13} {
		now := start.Add(caps.Tick * q / 4)
		l.TryAcquire(now, 1)
		exact(now, limit, "")
	}
	if !caps.ReconfigureLimit {
		return
	}
	// Lower, raise, and change the cadence, each at an instant of its own,
	// then check again a little later under the new parameters.
	changes := []struct {
		limit int64
		alt   bool
	}{{3, false}, {7, false}, {4, true}, {6, false}}
	now := start.Add(caps.Tick * 13 / 4)
	for _, c := range changes {
		if c.alt && caps.AltParams == nil {
			continue
		}
		p := caps.Params(c.limit)
		if c.alt {
			p = caps.AltParams(c.limit)
		}
		now = now.Add(caps.Tick * 3 / 4)
		reconfigure(t, l, p, now)
		when := fmt.Sprintf(" after Reconfigure(%v)", p)
		exact(now, c.limit, when)
		for _, q := range []time.Duration{2, 5, 11} {
			exact(now.Add(caps.Tick*q/4), c.limit, when)
		}
		now = now.Add(caps.Tick * 11 / 4)
	}
}

// checkRetryHints proves that refusals carry honest hints. A concurrency
// limiter at its limit answers HintOnRelease. A rate limiter answers HintAt
// with a RetryAt after the refusal at which the retry succeeds (a hint is
// never early), and before which, by more than HintSlack, it still fails
// (a hint is late only by rounding). Each probe runs on a twin built with
// the same parameters and the same history, since a probe that succeeds
// consumes. Any kind refuses a request above its limit with HintNever.
func checkRetryHints(t tb, h LimiterHarness) {
	caps := h.Capabilities()
	const limit = 3
	if caps.Class == spi.ClassConcurrency {
		var zero time.Time
		l := newLimiter(t, h, caps.Params(limit), zero)
		drain(t, l, zero, limit)
		if d := l.TryAcquire(zero, 1); d.Granted || d.Hint != spi.HintOnRelease {
			t.Errorf("at the limit, TryAcquire(1) = %+v, want a refusal with HintOnRelease", d)
		}
		if d := l.TryAcquire(zero, limit+1); d.Granted || d.Hint != spi.HintNever {
			t.Errorf("TryAcquire(limit+1) = %+v, want a refusal with HintNever", d)
		}
		l.Release(zero, limit)
		return
	}
	for _, q := range []time.Duration{0, 1, 5} {
		at := start.Add(caps.Tick * q / 4)
		history := func() spi.Limiter {
			l := newLimiter(t, h, caps.Params(limit), start)
			drain(t, l, start, limit)
			drain(t, l, at, 2*limit)
			return l
		}
		for n := int64(1); n <= 2; n++ {
			d := history().TryAcquire(at, n)
			if d.Granted || d.Hint != spi.HintAt || !d.RetryAt.After(at) {
				t.Errorf("at %v, on a drained limiter TryAcquire(%d) = %+v, want a refusal with HintAt after it", instant(at), n, d)
				continue
			}
			if !history().TryAcquire(d.RetryAt, n).Granted {
				t.Errorf("at %v, TryAcquire(%d) hinted %v, but a retry then failed: the hint is early",
					instant(at), n, instant(d.RetryAt))
			}
			if early := d.RetryAt.Add(-caps.HintSlack - 1); early.After(at) && history().TryAcquire(early, n).Granted {
				t.Errorf("at %v, TryAcquire(%d) hinted %v, but a retry at %v succeeded: the hint is late by more than HintSlack (%v)",
					instant(at), n, instant(d.RetryAt), instant(early), caps.HintSlack)
			}
		}
	}
	l := newLimiter(t, h, caps.Params(limit), start)
	if d := l.TryAcquire(start, limit+1); d.Granted || d.Hint != spi.HintNever {
		t.Errorf("TryAcquire(limit+1) = %+v, want a refusal with HintNever", d)
	}
}
