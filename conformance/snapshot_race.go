package conformance

import (
	"fmt"
	"math"
	"runtime"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/sluicerpc/sluice/spi"
)

// checkSnapshotExactUnderConcurrency proves that a concurrency limiter's
// Snapshot is exact while other goroutines acquire and release, not only
// when the limiter is quiet (SnapshotConsistent). The kernel relies on it:
// when a configuration replaces the kind of a live scope's concurrency
// limiter, the new state counts the old state's Snapshot().InUse as
// occupied until those holders release (kernel/succession.go, takeOver).
// An InUse short by one there lets two requests hold a budget of one.
//
// Every call of the check is stamped with a global sequence number just
// before it is made and just after it returns (see snapRace). Judged after
// each round, once everything is stamped, a Snapshot called at s0 and
// returned at s1 must report
//
//   - Kind and Limit exactly (nothing reconfigures the limiter here);
//   - lower <= InUse <= upper, where lower is the units of the grants whose
//     TryAcquire returned before s0 and whose Release was called after s1
//     (held throughout the call) and upper is the units of the grants
//     whose TryAcquire was called before s1 and whose Release returned
//     after s0 (perhaps held at some instant of it); a refused TryAcquire
//     holds nothing and counts in neither;
//   - Available within [max(Limit-upper, 0), max(Limit-lower, 0)];
//   - Available == max(Limit-InUse, 0): the figures are taken at one
//     instant (spi.Snapshot), and at any instant a concurrency limiter can
//     grant exactly what its limit leaves (NoFreeBurst checks it).
//
// A linearizable limiter takes effect for each call at one instant within
// the call, so it cannot fail any of these, whatever the scheduling. The
// bounds are what the kernel needs, too: a grant whose TryAcquire had not
// returned when takeOver read InUse bounces off the successor, so InUse
// must count at least every unit granted before the read began and not
// released before it ended.
//
// Three phases: a quiet script of single calls (the bounds then coincide,
// so a cached or late figure fails whatever the scheduling); a crowd of
// four goroutines that acquire one or two units, yield and release while a
// fifth takes Snapshots, on fresh limiters of limits 2 to 8 in turn, for
// crowdBudget and each limit at least once; and a duel (see race.go and
// snapshotDuel) at limit 2, in which the victim takes Snapshots and the
// driver changes what is held while the victim is suspended inside one. A
// Snapshot that reads two figures at two instants (acquired and released
// counters, or InUse and Available from two loads of the held count),
// suspended between them, then reports what no instant had.
//
// Rate kinds pass at once: see the comment in the function.
func checkSnapshotExactUnderConcurrency(t tb, h LimiterHarness) {
	if h.Capabilities().Class != spi.ClassConcurrency {
		// Not covered: the kernel relies on an exact InUse from
		// concurrency kinds only (it reads a rate state's InUse only to
		// tell that the state is at rest). At one instant a rate
		// limiter's Available could be bounded the same way (what it had
		// minus the units granted and not cancelled), but its InUse means
		// what its kind makes it mean, and across instants the bounds
		// would need what the cadence adds during each call: see
		// docs/conformance.md.
		t.Logf("only for concurrency kinds: a rate kind's Snapshot is checked sequentially (SnapshotConsistent, NoFreeBurst)")
		return
	}
	if !snapshotQuiet(t, h) || !snapshotCrowd(t, h) {
		return
	}
	snapshotDuel(t, h)
}

// grantRec is one grant of n units, stamped: its TryAcquire was called
// after a0 and returned before a1, its Release was called after r0 and
// returned before r1 (both math.MaxUint64 while it is held).
type grantRec struct {
	a0, a1, r0, r1 uint64
	n              int64
}

// snapHolder is a sequence of grants, one at a time, each given back
// before the next: its records are in order of a0 and of r1. Only one
// goroutine uses a holder at a time.
type snapHolder struct {
	recs []grantRec
	cur  grantRec
	held bool
}

// snapRec is one Snapshot, stamped: called after s0, returned before s1.
type snapRec struct {
	s0, s1 uint64
	s      spi.Snapshot
}

// snapRace drives one limiter with stamped calls: holders acquire and
// release, one reader takes Snapshots, and judge checks every Snapshot
// against the stamps.
type snapRace struct {
	r       *racer
	limit   int64
	kind    string
	seq     atomic.Uint64
	holders []*snapHolder
	snaps   []snapRec // the reader's
	// judged counts the Snapshots judged, maxRound the most in one
	// judgement.
	judged, maxRound int
}

func newSnapRace(t tb, h LimiterHarness, limit int64, holders int) *snapRace {
	t.Helper()
	sx := &snapRace{r: newRacer(t, h, limit), limit: limit, kind: h.Kind().Name()}
	for range holders {
		sx.holders = append(sx.holders, &snapHolder{})
	}
	return sx
}

// acquire asks for n units for hd, which holds nothing, and reports
// whether they were granted.
func (sx *snapRace) acquire(hd *snapHolder, n int64) bool {
	a0 := sx.seq.Add(1)
	granted := sx.r.acquire(nil, n)
	a1 := sx.seq.Add(1)
	if granted {
		hd.cur, hd.held = grantRec{a0: a0, a1: a1, r0: math.MaxUint64, r1: math.MaxUint64, n: n}, true
	}
	return granted
}

// release gives back what hd holds.
func (sx *snapRace) release(hd *snapHolder) {
	r0 := sx.seq.Add(1)
	sx.r.release(nil, hd.cur.n)
	r1 := sx.seq.Add(1)
	hd.cur.r0, hd.cur.r1 = r0, r1
	hd.recs = append(hd.recs, hd.cur)
	hd.held = false
}

// snapshot takes a Snapshot and records it. Only the reader calls it.
func (sx *snapRace) snapshot() {
	s0 := sx.seq.Add(1)
	s := sx.r.l.Snapshot(sx.r.now)
	s1 := sx.seq.Add(1)
	sx.snaps = append(sx.snaps, snapRec{s0: s0, s1: s1, s: s})
}

// snapshots takes k (at most 8) Snapshots in a row within one of ln's odd
// sequence numbers and records them. With share, one stamp between two
// Snapshots is the return of the first and the call of the second. Only
// the reader calls it.
func (sx *snapRace) snapshots(ln *lane, k int, share bool) {
	var recs [8]snapRec
	ln.enter(callSnapshot)
	stamp := sx.seq.Add(1)
	for i := range recs[:k] {
		if !share && i > 0 {
			stamp = sx.seq.Add(1)
		}
		recs[i].s0 = stamp
		recs[i].s = sx.r.l.Snapshot(sx.r.now)
		stamp = sx.seq.Add(1)
		recs[i].s1 = stamp
	}
	ln.leave()
	sx.snaps = append(sx.snaps, recs[:k]...)
}

// overlapping returns the grants of hd (its current one included) that
// might have been held at some instant of (s0, s1): called before s1,
// given back after s0.
func (hd *snapHolder) overlapping(s0, s1 uint64) []grantRec {
	recs := hd.recs
	i := sort.Search(len(recs), func(i int) bool { return recs[i].r1 > s0 })
	j := i
	for j < len(recs) && recs[j].a0 < s1 {
		j++
	}
	out := recs[i:j:j]
	if hd.held && hd.cur.a0 < s1 {
		out = append(out, hd.cur)
	}
	return out
}

// bounds returns the units held throughout (s0, s1) and the units that
// might have been held at some instant of it.
func (sx *snapRace) bounds(s0, s1 uint64) (lower, upper int64) {
	for _, hd := range sx.holders {
		for _, g := range hd.overlapping(s0, s1) {
			upper += g.n
			if g.a1 < s0 && g.r0 > s1 {
				lower += g.n
			}
		}
	}
	return lower, upper
}

// judge checks every Snapshot recorded since the last judgement, while no
// goroutine calls the limiter, records the first violation, and forgets
// what no later Snapshot can overlap.
func (sx *snapRace) judge() {
	for _, sr := range sx.snaps {
		if msg := sx.verdict(sr); msg != "" {
			sx.r.failf("%s (%s)", msg, sx.describe(sr))
			break
		}
	}
	sx.judged += len(sx.snaps)
	sx.maxRound = max(sx.maxRound, len(sx.snaps))
	sx.snaps = sx.snaps[:0]
	for _, hd := range sx.holders {
		hd.recs = hd.recs[:0]
	}
}

// verdict returns what is wrong with the Snapshot sr, or "".
func (sx *snapRace) verdict(sr snapRec) string {
	s, limit := sr.s, sx.limit
	lower, upper := sx.bounds(sr.s0, sr.s1)
	switch {
	case s.Kind != sx.kind || s.Limit != limit:
		return fmt.Sprintf("Snapshot() = %+v, want Kind %q and Limit %d (nothing reconfigured the limiter)", s, sx.kind, limit)
	case s.InUse < lower:
		return fmt.Sprintf("Snapshot() = %+v, but %d units were held throughout the call (granted before it was made, released after it returned): "+
			"InUse under-reports, and a kind replacement would count fewer units as occupied than their holders hold (kernel/succession.go)", s, lower)
	case s.InUse > upper:
		return fmt.Sprintf("Snapshot() = %+v, but at most %d units can have been held at any instant of the call: InUse over-reports", s, upper)
	case s.Available < max(limit-upper, 0) || s.Available > max(limit-lower, 0):
		return fmt.Sprintf("Snapshot() = %+v, but between %d and %d units were held during the call: Available must be within [%d, %d], what TryAcquire could grant",
			s, lower, upper, max(limit-upper, 0), max(limit-lower, 0))
	case s.Available != max(s.Limit-s.InUse, 0):
		return fmt.Sprintf("Snapshot() = %+v, but a concurrency limiter with that Limit and InUse at one instant has max(Limit-InUse, 0) = %d available: "+
			"the figures were read at different instants (between %d and %d units were held during the call)", s, max(s.Limit-s.InUse, 0), lower, upper)
	}
	return ""
}

// describe lists the stamps of the Snapshot sr and of the grants that
// overlap it.
func (sx *snapRace) describe(sr snapRec) string {
	var b strings.Builder
	fmt.Fprintf(&b, "stamps: Snapshot called after %d, returned before %d", sr.s0, sr.s1)
	for _, hd := range sx.holders {
		for _, g := range hd.overlapping(sr.s0, sr.s1) {
			fmt.Fprintf(&b, "; %d unit(s) acquired %d-%d, ", g.n, g.a0, g.a1)
			if g.r0 == math.MaxUint64 {
				b.WriteString("still held")
			} else {
				fmt.Fprintf(&b, "released %d-%d", g.r0, g.r1)
			}
		}
	}
	return b.String()
}

// snapshotQuiet is the first phase of checkSnapshotExactUnderConcurrency:
// a script of single calls at limit 4, a Snapshot after each. Nothing
// overlaps, so the bounds coincide: a Snapshot that caches a figure, or
// computes it late, fails here whatever the scheduling.
func snapshotQuiet(t tb, h LimiterHarness) bool {
	t.Helper()
	const limit = 4
	sx := newSnapRace(t, h, limit, 4)
	a, b, c, d := sx.holders[0], sx.holders[1], sx.holders[2], sx.holders[3]
	acq := func(hd *snapHolder, n int64) func() {
		return func() {
			if !hd.held {
				sx.acquire(hd, n)
			}
		}
	}
	rel := func(hd *snapHolder) func() {
		return func() {
			if hd.held {
				sx.release(hd)
			}
		}
	}
	steps := []func(){
		acq(a, 1), acq(b, 2), acq(c, 1), // full
		acq(d, 1), // refused
		rel(a), rel(b),
		acq(a, 3), // full again
		rel(c), rel(a),
		rel(d), // if it was granted
	}
	sx.snapshot()
	for _, step := range steps {
		step()
		sx.snapshot()
	}
	sx.judge()
	sx.r.settle()
	return sx.r.report(t, "single calls at limit 4, a Snapshot after each")
}

// snapshotCrowd is the second phase of checkSnapshotExactUnderConcurrency:
// rounds of four goroutines acquiring one or two units, yielding and
// releasing, and a reader taking Snapshots, each round on a fresh limiter
// whose limit runs through 2 to 8, for crowdBudget and every limit at
// least once.
func snapshotCrowd(t tb, h LimiterHarness) bool {
	t.Helper()
	limits := []int64{2, 5, 3, 8, 4, 7, 6}
	const workers, calls = 4, 32
	ok, rounds, judged := true, 0, 0
	raceFor(crowdBudget, len(limits), func(i int) bool {
		rounds++
		limit := limits[i%len(limits)]
		sx := newSnapRace(t, h, limit, workers)
		var finished atomic.Int64
		bodies := make([]func(), 0, workers+1)
		for w, hd := range sx.holders {
			bodies = append(bodies, func() {
				defer finished.Add(1)
				for j := range calls {
					if sx.r.stop() {
						return
					}
					n := int64(1)
					if (w+j)%3 == 2 {
						n = 2
					}
					if sx.acquire(hd, n) {
						runtime.Gosched()
						sx.release(hd)
					}
					runtime.Gosched()
				}
			})
		}
		bodies = append(bodies, func() {
			for j := 0; finished.Load() < workers && !sx.r.stop(); j++ {
				sx.snapshot()
				if j%4 == 3 {
					runtime.Gosched()
				}
			}
		})
		sx.r.run(bodies...)
		sx.judge()
		sx.r.settle()
		judged += sx.judged
		ok = sx.r.report(t, fmt.Sprintf("%d goroutines acquiring and releasing at limit %d, Snapshots taken meanwhile", workers, limit))
		return ok
	})
	if ok {
		t.Logf("%d goroutines acquiring and releasing at limits 2 to 8: %d rounds, %d Snapshots judged", workers, rounds, judged)
	}
	return ok
}

// snapshotDuel is the third phase of checkSnapshotExactUnderConcurrency: a
// duel at limit 2 with one unit held throughout (but in one attempt of
// four). The victim takes Snapshots in a loop, in calls of its lane of one
// or four (see snapCalls). The driver suspends it inside such a call and,
// in turn: acquires a unit, releases it and acquires it again, releasing
// it once the call returned; acquires and releases a unit; releases the
// unit held since before, acquiring it again once the call returned. A
// Snapshot computed from two reads, suspended between them, then mixes two
// instants: an acquired count read before the driver's grant and a
// released count read after its release (InUse short of the unit held
// throughout), or an InUse read before a change and an Available read
// after it.
//
// The window of such a Snapshot can be two loads a few instructions
// apart, and a suspension lands in it only now and then, so this duel
// witnesses snapWitnesses interleavings, unless it has witnessed
// raceWitnesses after snapWitnessFor (and after raceMaxTime the usual
// rule applies): a correct limiter in process takes tens of milliseconds
// for them, and through the plugin bridge, where every Snapshot is an RPC,
// the duel stops after snapWitnessFor.
const (
	snapWitnesses  = 512
	snapWitnessFor = time.Second
)

// snapCalls is the victim's cycle of lane calls: how many Snapshots each
// takes, and whether consecutive ones share a stamp. Where a suspension
// lands depends on what the instructions around the window cost (a load
// that misses the cache right after the driver's calls, the lane's and the
// stamps' atomic updates), so the victim varies them: a single Snapshot
// right after the lane's update, then four in a row with and without a
// stamp of their own between them. (Measured on the self-test's two narrow
// fixtures, each shape favours one of them.)
var snapCalls = []struct {
	k     int
	share bool
}{{1, false}, {4, false}, {4, true}}

func snapshotDuel(t tb, h LimiterHarness) bool {
	t.Helper()
	const limit = 2
	sx := newSnapRace(t, h, limit, 2)
	own, kept := sx.holders[0], sx.holders[1]
	if !sx.acquire(kept, 1) {
		t.Errorf("a fresh limiter of limit %d refused one unit", limit)
		return false
	}
	sx.r.afterRound = sx.judge
	sx.r.witnesses, sx.r.witnessFor = snapWitnesses, snapWitnessFor
	var x lane
	var last uint64
	k := 0
	phase := fmt.Sprintf("a victim taking Snapshots at limit %d while a driver acquires and releases", limit)
	ok := sx.r.duel(t, phase,
		func() {
			k = (k + 1) % len(snapCalls)
			sx.snapshots(&x, snapCalls[k].k, snapCalls[k].share)
		},
		func(i int) {
			before, suspended := sx.r.suspend(&x, 0, callSnapshot)
			sx.r.victim.interrupt()
			switch i % 4 {
			case 0, 2: // a unit comes, goes, and comes again to stay until the call returned
				if !sx.acquire(own, 1) {
					return
				}
				sx.r.victim.interrupt()
				sx.release(own)
				sx.r.victim.interrupt()
				if !sx.acquire(own, 1) {
					return
				}
				sx.r.witness(&x, before, suspended, &last, limit)
				sx.release(own)
			case 1: // a unit comes and goes
				if !sx.acquire(own, 1) {
					return
				}
				sx.r.victim.interrupt()
				sx.release(own)
				sx.r.witness(&x, before, suspended, &last, limit)
			case 3: // the unit held since before leaves, to come back once the call returned
				if kept.held {
					sx.release(kept)
					sx.r.witness(&x, before, suspended, &last, limit)
				}
				sx.acquire(kept, 1)
			}
		})
	if kept.held {
		sx.release(kept)
	}
	if ok {
		t.Logf("%s: %d Snapshots judged (at most %d in a round)", phase, sx.judged, sx.maxRound)
	}
	return ok
}
