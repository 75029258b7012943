package conformance

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicerpc/sluice/spi"
)

// The racing checks. The suite cannot stop a limiter inside one of its
// calls at a point of its choosing, so it cannot force the interleaving
// that a check-then-act race needs by itself. What it does instead:
//
//   - Every verdict is sound: a racing check reports a violation only from
//     facts that no linearizable limiter can produce, whatever the
//     scheduling (see holdings and limitWatch). A correct limiter passes
//     every time, on any machine, with or without -race.
//   - The duels make the interleaving happen and see it happen. A duel
//     has a victim goroutine that calls the limiter in a loop and a driver
//     that, over and over, interrupts the victim's thread (see victim: on
//     Linux a signal suspends it at an arbitrary instruction, inside the
//     limiter's call included), waits until the victim is suspended inside
//     a call, runs a critical sequence of calls of its own, and checks,
//     through the victim's lane, that the victim's one call spanned the
//     whole sequence: it has then witnessed the interleaving that exposes
//     a check-then-act, a lost update or a stale read, if the victim was
//     suspended between the check and the act. A duel keeps going until it
//     has witnessed raceWitnesses such interleavings or found a violation
//     (after raceMaxTime, half as many will do, and fewer than an eighth
//     stop it; raceHardTime at most).
//   - The crowd phases, eight goroutines that yield, add the broad
//     interleavings of many callers for crowdBudget.
//
// The clock bounds the effort, never the verdict: a broken limiter stops a
// phase at its first violation, and a correct one runs until it has
// witnessed enough or the budget is spent.

const (
	// raceWitnesses is how many exposing interleavings a duel witnesses
	// before it concludes that the limiter has no race of its kind.
	raceWitnesses = 64
	// A duel that has not witnessed raceWitnesses interleavings after
	// raceMaxTime (a starved machine, a limiter across a process boundary,
	// a platform without interrupts) stops once it has witnessed half as
	// many, or at once if it witnessed fewer than an eighth (more time
	// would not help much), and in any case after raceHardTime.
	raceMaxTime  = 2 * time.Second
	raceHardTime = 6 * time.Second
	// crowdBudget is the wall-clock time a crowd phase races.
	crowdBudget = 200 * time.Millisecond
	// duelRound is how many attempts a duel makes between two checks of
	// the quiet limiter's accounting.
	duelRound = 256
)

// raceFor calls round(i) for i = 0, 1, ... until it returns false (it
// found a violation, or has seen enough) or until at least minRounds rounds
// have run and the budget is spent.
func raceFor(budget time.Duration, minRounds int, round func(i int) bool) {
	deadline := time.Now().Add(budget)
	for i := 0; ; i++ {
		if !round(i) {
			return
		}
		if i+1 >= minRounds && !time.Now().Before(deadline) {
			return
		}
	}
}

// lane is a victim's sequence number: odd while it is inside a call of the
// limiter (kind says which). A driver that reads the same odd number
// before and after a sequence of its own knows that this one call spanned
// the whole sequence.
type lane struct {
	seq  atomic.Uint64
	kind atomic.Int32 // callAcquire or callGiveBack, set before seq turns odd
	_    [52]byte     // a cache line of its own
}

const (
	callAcquire int32 = iota + 1
	callGiveBack
	callSnapshot
)

func (ln *lane) enter(kind int32) {
	if ln.kind.Load() != kind {
		ln.kind.Store(kind)
	}
	ln.seq.Add(1)
}

func (ln *lane) leave() { ln.seq.Add(1) }

// spanned reports whether the call that was in progress at before is
// still in progress.
func (ln *lane) spanned(before uint64) bool {
	return before&1 == 1 && ln.seq.Load() == before
}

const (
	// patience is how many readings a driver makes of a victim's lane,
	// waiting for it to be suspended, after interrupting it, and
	// naturalPatience without an interrupt.
	patience        = 2048
	naturalPatience = 1 << 16
	// waitOutFor bounds how long a driver waits for a victim's call to
	// return.
	waitOutFor = 100 * time.Millisecond
)

// await waits, for at most polls readings of the sequence number, until
// the victim is suspended in a call of kind (0: any) that it began after
// its sequence number was after, and returns that call's sequence number.
// Suspended means that stuckReads readings in a row saw the same odd
// number: far longer than an unimpeded call takes.
func (ln *lane) await(after uint64, kind int32, polls int) (seq uint64, ok bool) {
	for i := 1; i <= polls; i++ {
		seq = ln.seq.Load()
		if seq&1 == 1 && seq > after && (kind == 0 || ln.kind.Load() == kind) {
			same := true
			for range stuckReads {
				if ln.seq.Load() != seq {
					same = false
					break
				}
			}
			if same {
				return seq, true
			}
		}
		if i%1024 == 0 {
			runtime.Gosched() // with one P, let the victim run
		}
	}
	return 0, false
}

// stuckReads is how many readings in a row must see a victim's sequence
// number unchanged for await to take it as suspended.
const stuckReads = 32

// waitOut waits, boundedly, until the call in progress at seq returns.
func (ln *lane) waitOut(seq uint64) {
	began := time.Now()
	for i := 1; ln.seq.Load() == seq; i++ {
		if i%256 == 0 {
			if time.Since(began) >= waitOutFor {
				return
			}
			runtime.Gosched() // with one P, let the victim run
		}
	}
}

// holdings brackets the units a limiter holds (a concurrency limiter's
// held units; for a rate limiter at one instant, the units granted and not
// cancelled), whatever the limiter does inside its calls. low counts a
// grant from the return of its TryAcquire to the call of its Release (or
// Cancel); up counts it from the call of its TryAcquire to the return of
// its Release (a refusal from the call to the return). For a linearizable
// limiter, at every instant
//
//	low <= held <= up
//
// where held is what the limiter holds at that instant.
type holdings struct {
	low, up atomic.Int64
}

// limitWatch publishes, for the goroutines that acquire, which limit is in
// force and whether the held units are known to be within it. Its word is
// epoch<<32 | pinned<<31 | limit, and it changes at every transition, so
// that a reader who loads the same word before and after a reading knows
// the reading happened within one state.
//
// The reconfiguring goroutine unpins (a new epoch) before it calls
// Reconfigure, and pins the limit L it set once, after Reconfigure
// returned, it read up <= L. From then until the next unpin, a
// linearizable limiter holds at most L: at the reading it held at most up,
// and every grant after it was decided against L. So a reading of low
// above L while pinned proves that a grant was decided against another
// limit: one replaced before the reading (a stale limit), or none (a
// check-then-act overshoot).
type limitWatch struct {
	word  atomic.Uint64
	epoch uint64 // the reconfiguring goroutine's own copy
}

const pinnedBit = 1 << 31

func (w *limitWatch) load() uint64 { return w.word.Load() }

// unpin starts a new epoch, before a Reconfigure.
func (w *limitWatch) unpin() {
	w.epoch++
	w.word.Store(w.epoch << 32)
}

// pin publishes limit as binding, if up is within it now; it reports
// whether it did.
func (w *limitWatch) pin(h *holdings, limit int64) bool {
	if h.up.Load() > limit {
		return false
	}
	w.word.Store(w.epoch<<32 | pinnedBit | uint64(limit))
	return true
}

// pinnedLimit returns the limit of a pinned word.
func pinnedLimit(word uint64) (int64, bool) {
	if word&pinnedBit == 0 {
		return 0, false
	}
	return int64(word & (pinnedBit - 1)), true
}

// racer drives one limiter from several goroutines, keeps the holdings
// and the watch, and records the first violation. A concurrency limiter
// is called at the zero time and given back with Release; a rate limiter
// is called at one instant, where nothing refills, and given back with
// Cancel, so that at that instant it counts units as a concurrency
// limiter does.
type racer struct {
	l       spi.Limiter
	class   spi.Class
	now     time.Time
	params  func(int64) spi.Params
	ceiling int64 // nothing above it is ever available
	avail0  int64 // rate: Snapshot().Available when built
	hold    holdings
	watch   limitWatch

	victim    victim
	witnessed atomic.Int64 // exposing interleavings seen
	// witnesses, if above raceWitnesses, is how many exposing
	// interleavings a duel witnesses before it concludes, for races whose
	// window is so narrow that few interleavings expose them; after
	// witnessFor, raceWitnesses will do (and after raceMaxTime the usual
	// rule applies).
	witnesses  int64
	witnessFor time.Duration
	// afterRound, if set, runs after each round of a duel, once its
	// goroutines have stopped, before the accounting is checked.
	afterRound func()

	mu       sync.Mutex
	violated string
	stopped  atomic.Bool
}

// newRacer builds a limiter of h's kind with limit, as the racers call it.
func newRacer(t tb, h LimiterHarness, limit int64) *racer {
	t.Helper()
	caps := h.Capabilities()
	r := &racer{class: caps.Class, params: caps.Params, ceiling: limit}
	if r.class == spi.ClassRate {
		r.now = start
	}
	r.l = newLimiter(t, h, caps.Params(limit), r.now)
	if r.class == spi.ClassRate {
		r.avail0 = r.l.Snapshot(r.now).Available
		r.ceiling = r.avail0
	}
	return r
}

// failf records the first violation and stops the race.
func (r *racer) failf(format string, args ...any) {
	r.mu.Lock()
	if r.violated == "" {
		r.violated = fmt.Sprintf(format, args...)
	}
	r.mu.Unlock()
	r.stopped.Store(true)
}

func (r *racer) stop() bool { return r.stopped.Load() }

// acquire calls TryAcquire(n) (within ln's odd sequence numbers, if ln is
// not nil) and, on a grant, checks the units held against the ceiling and
// against the pinned limit, if any.
func (r *racer) acquire(ln *lane, n int64) bool {
	r.hold.up.Add(n)
	if ln != nil {
		ln.enter(callAcquire)
	}
	granted := r.l.TryAcquire(r.now, n).Granted
	if ln != nil {
		ln.leave()
	}
	if !granted {
		r.hold.up.Add(-n)
		return false
	}
	before := r.watch.load()
	low := r.hold.low.Add(n)
	after := r.watch.load()
	if low > r.ceiling {
		r.failf("%d units were held at once; no limit in force was above %d", low, r.ceiling)
	} else if limit, ok := pinnedLimit(before); ok && before == after && low > limit {
		r.failf("%d units were held at once after Reconfigure set the limit to %d and at most %d were held or being acquired: "+
			"a grant was decided against a limit no longer in force", low, limit, limit)
	}
	return true
}

// release gives back n units acquired by acquire (within ln's odd
// sequence numbers, if ln is not nil).
func (r *racer) release(ln *lane, n int64) {
	r.hold.low.Add(-n)
	if ln != nil {
		ln.enter(callGiveBack)
	}
	if r.class == spi.ClassRate {
		r.l.Cancel(r.now, n)
	} else {
		r.l.Release(r.now, n)
	}
	if ln != nil {
		ln.leave()
	}
	r.hold.up.Add(-n)
}

// checkHeld checks the units held now against limit.
func (r *racer) checkHeld(limit int64) {
	if low := r.hold.low.Load(); low > limit {
		r.failf("%d units were held at once after Reconfigure set the limit to %d and at most %d were held or being acquired: "+
			"a grant was decided against a limit no longer in force", low, limit, limit)
	}
}

// reconfigure unpins, changes the limit and tries to pin it.
func (r *racer) reconfigure(limit int64) (pinned bool) {
	r.watch.unpin()
	if err := r.l.Reconfigure(r.now, r.params(limit)); err != nil {
		r.failf("Reconfigure(%d): %v", limit, err)
		return false
	}
	return r.watch.pin(&r.hold, limit)
}

// witness counts an exposing interleaving: the victim's call in progress
// at before (a suspended one, if suspended) spanned the driver's critical
// sequence. It then waits for that call to return and checks the units
// held against limit for a while, so that a grant the victim makes last
// is seen. last is the driver's memory of the last call counted.
func (r *racer) witness(ln *lane, before uint64, suspended bool, last *uint64, limit int64) {
	if !ln.spanned(before) {
		return
	}
	if suspended && before != *last {
		r.witnessed.Add(1)
		*last = before
	}
	ln.waitOut(before)
	for range 256 {
		r.checkHeld(limit)
	}
}

// run starts each body on its own goroutine, waits for all, and turns a
// panic into a violation.
func (r *racer) run(bodies ...func()) {
	var wg sync.WaitGroup
	for _, body := range bodies {
		wg.Go(func() {
			defer func() {
				if p := recover(); p != nil {
					r.failf("a goroutine calling the limiter panicked: %v", p)
				}
			}()
			body()
		})
	}
	wg.Wait()
}

// settle, once every goroutine has stopped, checks that the limiter holds
// exactly what the racers hold: a lost update shows here.
func (r *racer) settle() {
	low, up := r.hold.low.Load(), r.hold.up.Load()
	if low != up {
		r.failf("internal error: low %d != up %d once quiet", low, up)
		return
	}
	s := r.l.Snapshot(r.now)
	switch {
	case r.class == spi.ClassConcurrency && s.InUse != low:
		r.failf("once every goroutine stopped, %d units were held but Snapshot().InUse = %d (a lost update)", low, s.InUse)
	case r.class == spi.ClassRate && s.Available != r.avail0-low:
		r.failf("once every goroutine stopped, %d of %d units were taken and not cancelled but Snapshot().Available = %d (a lost update)",
			low, r.avail0, s.Available)
	}
}

// report fails t with the violation, if any.
func (r *racer) report(t tb, phase string) bool {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.violated != "" {
		t.Errorf("%s: %s (after %d witnessed interleavings)", phase, r.violated, r.witnessed.Load())
		return false
	}
	return true
}

// holdFor keeps a unit the caller holds for a few readings of the units
// held, checking each against limit, without yielding.
func (r *racer) holdFor(limit int64) {
	for range 16 {
		r.checkHeld(limit)
	}
}

// crowdPhase is a phase of checkNeverAboveLimitConcurrently for
// concurrency kinds: eight goroutines acquire, yield, and release one
// unit, against a limit of 6 that another goroutine keeps changing if
// reconfiguring. Every grant is checked against 6, and, while a limit is
// pinned, against it.
func crowdPhase(t tb, h LimiterHarness, reconfiguring bool) bool {
	t.Helper()
	const high, workers, rounds = 6, 8, 250
	r := newRacer(t, h, high)
	r.watch.pin(&r.hold, high)
	raceFor(crowdBudget, 1, func(int) bool {
		var finished atomic.Int64
		bodies := make([]func(), 0, workers+1)
		for range workers {
			bodies = append(bodies, func() {
				defer finished.Add(1)
				for range rounds {
					if r.stop() {
						return
					}
					if !r.acquire(nil, 1) {
						runtime.Gosched()
						continue
					}
					runtime.Gosched()
					r.release(nil, 1)
				}
			})
		}
		if reconfiguring {
			bodies = append(bodies, func() {
				for finished.Load() < workers && !r.stop() {
					for _, limit := range []int64{2, high, 4, high, 3} {
						pinned := r.reconfigure(limit)
						for i := 0; i < 4 && !pinned; i++ {
							runtime.Gosched()
							pinned = r.watch.pin(&r.hold, limit)
						}
						runtime.Gosched()
					}
				}
			})
		}
		r.run(bodies...)
		r.settle()
		return !r.stop()
	})
	return r.report(t, fmt.Sprintf("%d goroutines at limit %d (reconfiguring: %v)", workers, high, reconfiguring))
}

// duel runs rounds of a victim and a driver until a violation, or until
// the driver has witnessed enough exposing interleavings (see
// raceWitnesses), checking the quiet limiter's accounting after each
// round, and logs what it saw. victimBody is the victim's loop body; it
// runs until the driver's duelRound attempts of attempt are done.
func (r *racer) duel(t tb, phase string, victimBody func(), attempt func(i int)) bool {
	t.Helper()
	if runtime.GOMAXPROCS(0) < 2 {
		t.Logf("%s: GOMAXPROCS is 1: the victim and the driver cannot run at once, and the race is explored far less", phase)
	}
	began := time.Now()
	target := max(r.witnesses, raceWitnesses)
	enough := func() bool {
		w, d := r.witnessed.Load(), time.Since(began)
		return w >= target || d >= r.witnessFor && w >= raceWitnesses ||
			d >= raceMaxTime && (w >= raceWitnesses/2 || w < raceWitnesses/8) || d >= raceHardTime
	}
	rounds := 0
	raceFor(raceHardTime, 1, func(int) bool {
		var done atomic.Bool
		entered := make(chan struct{})
		victim := func() {
			leave := r.victim.enter()
			defer leave()
			close(entered)
			for !done.Load() && !r.stop() {
				victimBody()
			}
		}
		driver := func() {
			defer done.Store(true)
			<-entered
			for i := range duelRound {
				if r.stop() || i%16 == 0 && enough() {
					return
				}
				attempt(rounds*duelRound + i)
			}
		}
		r.run(victim, driver)
		if r.afterRound != nil {
			r.afterRound()
		}
		r.settle()
		rounds++
		return !r.stop() && !enough()
	})
	if !r.report(t, phase) {
		return false
	}
	w := r.witnessed.Load()
	t.Logf("%s: %d attempts in %v witnessed %d exposing interleavings", phase, rounds*duelRound, time.Since(began).Round(time.Millisecond), w)
	if w < raceWitnesses/2 {
		t.Logf("%s: fewer than %d interleavings witnessed: the race was explored less than intended (interrupts available: %v)",
			phase, raceWitnesses/2, canInterrupt)
	}
	return true
}

// suspend interrupts the victim and waits for it to be suspended inside a
// call of kind begun after after.
func (r *racer) suspend(ln *lane, after uint64, kind int32) (uint64, bool) {
	wait := naturalPatience
	if r.victim.interrupt() {
		wait = patience
	}
	return ln.await(after, kind, wait)
}

// edgeDuel is a phase of checkNeverAboveLimitConcurrently: at limit 1 (a
// rate kind at one instant, giving back with Cancel), the victim acquires
// and gives back one unit in a loop; the driver suspends it inside its
// TryAcquire and takes the unit itself. A check-then-act victim suspended
// between its check and its act then takes a second unit when it resumes.
func edgeDuel(t tb, h LimiterHarness) bool {
	t.Helper()
	r := newRacer(t, h, 1)
	var x lane
	var last uint64
	return r.duel(t, "a victim and a driver at limit 1",
		func() {
			if r.acquire(&x, 1) {
				r.release(&x, 1)
			}
		},
		func(int) {
			before, suspended := r.suspend(&x, 0, callAcquire)
			r.victim.interrupt()
			if !r.acquire(nil, 1) {
				return
			}
			r.witness(&x, before, suspended, &last, r.ceiling)
			r.release(nil, 1)
		})
}

// slackDuel is a phase of checkNeverAboveLimitConcurrently: at limit 4,
// with room to spare, the victim acquires and gives back one unit in a
// loop; the driver suspends it inside either call (each in turn) and
// takes a unit while it is suspended. A victim whose update is a load and a store, suspended
// between them, then overwrites the driver's: the accounting checked after
// each round is off.
func slackDuel(t tb, h LimiterHarness) bool {
	t.Helper()
	r := newRacer(t, h, 4)
	var x lane
	var last uint64
	return r.duel(t, "a victim and a driver at limit 4",
		func() {
			if r.acquire(&x, 1) {
				r.release(&x, 1)
			}
		},
		func(i int) {
			kind := callAcquire // alternately inside either call
			if i%2 == 1 {
				kind = callGiveBack
			}
			before, suspended := r.suspend(&x, 0, kind)
			r.victim.interrupt()
			if !r.acquire(nil, 1) {
				return
			}
			r.witness(&x, before, suspended, &last, r.ceiling)
			r.release(nil, 1)
		})
}

// checkGrantsRespectLimitInForce proves that every grant of a concurrency
// limiter is decided against the limit in force when it takes effect, not
// against one that a concurrent Reconfigure replaced. The victim acquires
// and releases one unit in a loop. The driver, over and over, raises the
// limit to 2, suspends the victim inside a TryAcquire begun after the
// raise, lowers the limit to 1, pins it (at most one unit is held or being
// acquired, see limitWatch), and takes a unit, which it holds until the
// victim's call returns; every other time it also holds a unit across the
// shrink and gives it back before pinning, so that the held count returns
// to what the victim may have read before the shrink. A limiter whose
// grant was decided against the limit 2 then holds 2 units under a limit
// of 1 that it already respected: a linearizable limiter cannot. Comparing
// with the highest limit ever in force, as a plain concurrent check does,
// cannot catch it.
func checkGrantsRespectLimitInForce(t tb, h LimiterHarness) {
	requireClass(t, h, spi.ClassConcurrency)
	caps := h.Capabilities()
	if !caps.ReconfigureLimit {
		t.Skip("Reconfigure does not change the limit")
	}
	const hi, lo = 2, 1
	r := newRacer(t, h, hi)
	var x lane
	var last uint64
	// The victim's sequence numbers around the last period at 2 during
	// which it made progress.
	var prevFrom, prevTo uint64
	r.duel(t, "a victim acquiring across shrinks from 2 to 1",
		func() {
			if r.acquire(&x, 1) {
				r.release(nil, 1)
			}
		},
		func(i int) {
			r.reconfigure(hi)
			from := x.seq.Load()
			own := i%2 == 1 && r.acquire(nil, 1)
			// Keep the limit at 2 until the victim is caught inside a
			// TryAcquire begun since, or is found suspended (by the
			// operating system, on a busy machine) inside one begun
			// during the last period at 2 in which it made progress.
			var before uint64
			suspended := false
			for try := 0; try < 16 && !suspended; try++ {
				before, suspended = r.suspend(&x, from, callAcquire)
			}
			if !suspended {
				if seq, ok := x.await(prevFrom, callAcquire, stuckReads); ok && seq <= prevTo {
					before, suspended = seq, true
				}
			}
			to := x.seq.Load()
			// Interrupting again between the steps keeps a suspended
			// victim suspended: a signal pending when its handler returns
			// is delivered before it runs an instruction of its own.
			r.victim.interrupt()
			r.reconfigure(lo)
			if to > from { // the victim made progress during this period
				prevFrom, prevTo = from, to
			}
			if own {
				r.victim.interrupt()
				r.release(nil, 1)
			}
			r.victim.interrupt()
			if !r.watch.pin(&r.hold, lo) || !r.acquire(nil, 1) {
				return
			}
			r.witness(&x, before, suspended, &last, lo)
			r.holdFor(lo)
			r.release(nil, 1)
		})
}
