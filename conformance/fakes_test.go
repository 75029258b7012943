package conformance

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicerpc/sluice/spi"
)

// This file holds small limiters for the suite's own tests: a correct
// semaphore, a correct discrete token bucket and a correct fixed window,
// each with switches that break one contract on purpose.

// fakeKind is a LimiterKind built from a constructor.
type fakeKind struct {
	name  string
	class spi.Class
	keys  []string
	build func(p spi.Params, now time.Time) spi.Limiter
}

func (k fakeKind) Name() string     { return k.name }
func (k fakeKind) Class() spi.Class { return k.class }

func (k fakeKind) Validate(p spi.Params) error {
	if len(p) != len(k.keys) {
		return fmt.Errorf("want exactly %v, got %v", k.keys, p)
	}
	for _, key := range k.keys {
		if v, ok := p[key]; !ok || v < 1 {
			return spi.InvalidParam(key, "required and positive")
		}
	}
	return nil
}

func (k fakeKind) New(p spi.Params, now time.Time) (spi.Limiter, error) {
	if err := k.Validate(p); err != nil {
		return nil, err
	}
	return k.build(p, now), nil
}

// fakeHarness describes a fake kind to the suite.
type fakeHarness struct {
	kind fakeKind
	caps LimiterCapabilities
}

func (h fakeHarness) Kind() spi.LimiterKind             { return h.kind }
func (h fakeHarness) Capabilities() LimiterCapabilities { return h.caps }
func (fakeHarness) Close()                              {}

// semFaults are the ways a semaphore can be broken. The racy ones
// (overshoot, tightOvershoot, staleLimit, staleLimitPerAttempt,
// lostRelease) are written as a third party would write them: nothing in
// them widens their race window, except overshoot's Gosched.
type semFaults struct {
	overshoot    bool // check, then increment: concurrent acquirers overshoot
	doubleCredit bool // Release below zero is credited instead of panicking
	revoke       bool // a shrink drops the holders above the new limit
	lyingSnap    bool // Snapshot reports nothing in use

	// tightOvershoot: check, then increment, with nothing in between.
	tightOvershoot bool
	// staleLimit: limit and held are separate atomics; TryAcquire reads
	// the limit once, then CASes held against it, so a grant decided
	// against a replaced limit lands after a shrink.
	staleLimit bool
	// staleLimitPerAttempt: the same, reading the limit again before each
	// CAS of held: the window is only from the reads to the CAS.
	staleLimitPerAttempt bool
	// lostRelease: Release is a load then a store of held, not one atomic
	// step, so it can overwrite a concurrent grant (or be overwritten).
	lostRelease bool
	// staleSnap: Snapshot is right until a Reconfigure and then keeps
	// reporting the limit given to New.
	staleSnap bool
	// staleHint: a request above the limit given to New is refused with
	// HintNever (and never granted) even after a raise allows it.
	staleHint bool

	// The Snapshots below are lock-free, as a third party keeping
	// counters beside the held count would write them; each is exact
	// whenever the limiter is quiet (but snapCached).
	//
	// snapCountersGosched: InUse is acquired.Load() - released.Load()
	// (clamped at zero), the acquired count loaded first, with a Gosched
	// between the loads: a grant and its release between them are
	// missed and counted, so InUse under-reports.
	snapCountersGosched bool
	// snapCounters: the same, with nothing between the loads.
	snapCounters bool
	// snapCached: Snapshot reports figures cached at every fourth call of
	// TryAcquire or Release (refusals included), stale in between.
	snapCached bool
	// snapTornAvailable: InUse is one load of the held count and
	// Available is the limit minus a second load of it: each figure is
	// one the limiter had, but not at the same instant.
	snapTornAvailable bool
}

// sem is a concurrency limiter: held units against a limit.
type sem struct {
	f     semFaults
	held  atomic.Int64
	limit atomic.Int64
	first int64      // the limit given to New
	mu    sync.Mutex // serializes the correct acquire path

	// acquired and released count the units granted and given back
	// (updated under mu); ops counts the calls of TryAcquire and
	// Release, and cache is the Snapshot figures of snapCached.
	acquired, released atomic.Int64
	ops                atomic.Int64
	cache              atomic.Int64
}

// counted records a call of TryAcquire or Release: snapCached refreshes
// its cache at every fourth.
func (s *sem) counted() {
	if s.ops.Add(1)%4 == 0 {
		s.cache.Store(s.held.Load())
	}
}

func (s *sem) TryAcquire(_ time.Time, n int64) spi.Decision {
	limit := s.limit.Load()
	if s.f.staleHint {
		limit = s.first
	}
	if n > limit {
		return spi.RefuseNever()
	}
	switch {
	case s.f.overshoot:
		if s.held.Load()+n > limit {
			return spi.RefuseUntilRelease()
		}
		runtime.Gosched()
		s.held.Add(n)
		return spi.Grant()
	case s.f.tightOvershoot:
		if s.held.Load()+n > limit {
			return spi.RefuseUntilRelease()
		}
		s.held.Add(n)
		return spi.Grant()
	case s.f.staleLimit:
		for {
			held := s.held.Load()
			if held+n > limit {
				return spi.RefuseUntilRelease()
			}
			if s.held.CompareAndSwap(held, held+n) {
				return spi.Grant()
			}
		}
	case s.f.staleLimitPerAttempt:
		for {
			limit, held := s.limit.Load(), s.held.Load()
			if held+n > limit {
				return spi.RefuseUntilRelease()
			}
			if s.held.CompareAndSwap(held, held+n) {
				return spi.Grant()
			}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.counted()
	if n > s.limit.Load()-s.held.Load() {
		return spi.RefuseUntilRelease()
	}
	s.held.Add(n)
	s.acquired.Add(n)
	return spi.Grant()
}

func (s *sem) Release(_ time.Time, n int64) {
	switch {
	case s.f.lostRelease:
		held := s.held.Load()
		if held < n {
			panic("sem: released more than held")
		}
		s.held.Store(held - n)
		return
	case s.f.staleLimit || s.f.staleLimitPerAttempt:
		// Lock-free, as a third party pairing a lock-free TryAcquire
		// would write it.
		for {
			held := s.held.Load()
			if held < n {
				panic("sem: released more than held")
			}
			if s.held.CompareAndSwap(held, held-n) {
				return
			}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.f.doubleCredit && s.held.Load() < n {
		panic("sem: released more than held")
	}
	s.held.Add(-n)
	s.released.Add(n)
	s.counted()
}

func (s *sem) Cancel(now time.Time, n int64) { s.Release(now, n) }

func (s *sem) Reconfigure(_ time.Time, p spi.Params) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.limit.Store(p["limit"])
	if s.f.revoke && s.held.Load() > p["limit"] {
		s.held.Store(p["limit"])
	}
	return nil
}

func (s *sem) Snapshot(time.Time) spi.Snapshot {
	switch {
	case s.f.snapCountersGosched || s.f.snapCounters:
		acquired := s.acquired.Load()
		if s.f.snapCountersGosched {
			runtime.Gosched()
		}
		inUse := max(acquired-s.released.Load(), 0)
		limit := s.limit.Load()
		return spi.Snapshot{Kind: "fakesem", Limit: limit, InUse: inUse, Available: max(limit-inUse, 0)}
	case s.f.snapCached:
		limit, inUse := s.limit.Load(), s.cache.Load()
		return spi.Snapshot{Kind: "fakesem", Limit: limit, InUse: inUse, Available: max(limit-inUse, 0)}
	case s.f.snapTornAvailable:
		inUse := s.held.Load()
		limit := s.limit.Load()
		return spi.Snapshot{Kind: "fakesem", Limit: limit, InUse: inUse, Available: max(limit-s.held.Load(), 0)}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	held, limit := s.held.Load(), s.limit.Load()
	if s.f.staleSnap {
		limit = s.first
	}
	snap := spi.Snapshot{Kind: "fakesem", Limit: limit, InUse: held, Available: max(limit-held, 0)}
	if s.f.lyingSnap {
		snap.InUse, snap.Available = 0, limit
	}
	return snap
}

func semHarness(f semFaults) fakeHarness {
	return fakeHarness{
		kind: fakeKind{name: "fakesem", class: spi.ClassConcurrency, keys: []string{"limit"},
			build: func(p spi.Params, _ time.Time) spi.Limiter {
				s := &sem{f: f, first: p["limit"]}
				s.limit.Store(p["limit"])
				return s
			}},
		caps: LimiterCapabilities{
			Class:            spi.ClassConcurrency,
			Params:           func(limit int64) spi.Params { return spi.Params{"limit": limit} },
			ReconfigureLimit: true,
		},
	}
}

// bucketFaults are the ways a token bucket can be broken.
type bucketFaults struct {
	freeBurst     bool // Reconfigure refills the bucket to the new capacity
	refillOnRaise bool // a raised capacity adds the raise to the tokens
	earlyHint     bool // RetryAt is 1ns early
	lateHint      bool // RetryAt is one period late
	overshoot     bool // check, then decrement: concurrent acquirers overdraw

	// doubleCancel: Cancel adds the units it is handed back, whatever
	// the grant left (see naiveRefund), and is not clamped at the
	// capacity.
	doubleCancel bool
	// naiveRefund: Cancel adds the units it is handed back, clamped at
	// the capacity, even when the bucket was full (or clamped) since the
	// grant: a late Cancel gives back tokens that the grant's absence
	// would have lost at the cap.
	naiveRefund bool

	// noClampOnLower: a lowered capacity does not clamp the tokens, so
	// the old availability stays available (and Snapshot reports it).
	noClampOnLower bool
	// staleSnap: Snapshot is right until a Reconfigure, then keeps
	// reporting against the capacity given to New.
	staleSnap bool
	// tightOvershoot: check, then decrement, with nothing in between but
	// the lock being taken again.
	tightOvershoot bool
	// cancelOvercredit: Cancel gives back one token more than it was
	// handed (clamped at the capacity).
	cancelOvercredit bool
	// staleHintPeriod: RetryAt is computed with the period given to New,
	// early after a change to a slower cadence.
	staleHintPeriod bool
	// keepPhaseOnCadence: a change of cadence keeps the origin and the
	// boundaries credited, so a faster cadence credits at once every
	// boundary it would have had since the origin.
	keepPhaseOnCadence bool
	// refusalConsumes: a refused TryAcquire still takes a token when
	// there is one (the bucket counts attempts, not grants).
	refusalConsumes bool
	// lateRewinds: a caller with an earlier now than one already seen
	// moves the credited boundaries back, and the next on-time caller is
	// credited them again.
	lateRewinds bool

	// farLateRewinds: the same, only for a caller more than one period
	// late (a caller within a period leaves the boundaries alone).
	farLateRewinds bool
	// bulkOffByOne: a TryAcquire of four or more units is granted when
	// one token fewer is left (the tokens clamp at zero).
	bulkOffByOne bool
	// floatCompare: whether the tokens cover a request is decided in
	// float64, which cannot tell 2^53 from 2^53+1.
	floatCompare bool
	// inUseZero: Snapshot reports InUse 0 whatever was taken.
	inUseZero bool
	// binaryPeriod: the period is kept in 1024ths of a second,
	// truncated: 100ms becomes 99.6ms, a boundary gained every 256.
	binaryPeriod bool
}

// periodOf is the period the bucket keeps for the parameter p.
func (f bucketFaults) periodOf(p int64) time.Duration {
	if f.binaryPeriod {
		return time.Duration(p*1024/int64(time.Second)) * time.Second / 1024
	}
	return time.Duration(p)
}

// bucket is a discrete token bucket: every period boundary after origin
// adds rate tokens, up to capacity. Parameters: "cap", "rate", "period".
//
// A Cancel gives back only what the grant's absence would have left (see
// spi.Limiter.Cancel), found from the grants made at the Cancel's instant:
// a bucket that held d tokens more than it does would, after a clamp
// (a refill or a lowered capacity, each capped at the capacity) that
// leaves it holding x, hold min(d, cap - x) more; grants and refusals
// change both alike. So each instant that has units granted and not
// cancelled keeps a bound, lowered to cap - tokens at every clamp.
type bucket struct {
	f      bucketFaults
	mu     sync.Mutex
	cap    int64
	rate   int64
	period time.Duration
	origin time.Time
	k      int64 // boundaries already credited
	tokens int64
	grants []bucketGrant
	// spent holds the instants (UnixNano) whose grants can give back
	// nothing: a bound of 0 never rises, so they leave grants and a
	// later grant at such an instant gives back nothing either.
	spent map[int64]bool

	firstCap    int64         // the capacity given to New
	firstPeriod time.Duration // the period given to New
}

// bucketGrant is what the grants made at one instant can give back.
type bucketGrant struct {
	at time.Time
	n  int64 // granted at at and not cancelled
	// back bounds what cancelling them all can add: unbounded (beyond n)
	// until a clamp since the first of them. A later grant at the same
	// instant keeps the bound, which is only stricter for it: a Cancel
	// cannot tell the grants of one instant apart.
	back int64
}

const unbounded = int64(math.MaxInt64)

// clamped lowers the bound of every grant but grants[skip] (none if skip
// is -1) to what the bucket can still take.
func (b *bucket) clamped(skip int) {
	kept := b.grants[:0]
	for i, g := range b.grants {
		if i != skip {
			g.back = min(g.back, max(b.cap-b.tokens, 0))
		}
		if g.back == 0 && i != skip {
			if b.spent == nil {
				b.spent = map[int64]bool{}
			}
			b.spent[g.at.UnixNano()] = true
			continue
		}
		kept = append(kept, g)
	}
	b.grants = kept
}

func (b *bucket) advance(now time.Time) {
	if k := int64(now.Sub(b.origin) / b.period); k > b.k {
		b.tokens = min(b.cap, satAdd(b.tokens, (k-b.k)*b.rate))
		b.k = k
		b.clamped(-1)
	} else if b.f.lateRewinds || (b.f.farLateRewinds && k < b.k-1) {
		b.k = k
	}
}

// granted records n units granted at now.
func (b *bucket) granted(now time.Time, n int64) {
	if b.spent[now.UnixNano()] {
		return
	}
	for i := range b.grants {
		if b.grants[i].at.Equal(now) {
			b.grants[i].n += n
			return
		}
	}
	b.grants = append(b.grants, bucketGrant{at: now, n: n, back: unbounded})
	// Only the latest instants are remembered: the grants of an older
	// one give back nothing (too strict, never loose).
	if len(b.grants) > maxBucketGrants {
		if b.spent == nil {
			b.spent = map[int64]bool{}
		}
		b.spent[b.grants[0].at.UnixNano()] = true
		b.grants = slices.Delete(b.grants, 0, 1)
	}
}

// maxBucketGrants bounds the instants a bucket remembers grants for.
const maxBucketGrants = 64

func (b *bucket) TryAcquire(now time.Time, n int64) spi.Decision {
	if b.f.overshoot {
		b.mu.Lock()
		b.advance(now)
		enough := n <= b.tokens
		b.mu.Unlock()
		if enough {
			runtime.Gosched()
			b.mu.Lock()
			b.tokens -= n
			b.granted(now, n)
			b.mu.Unlock()
			return spi.Grant()
		}
	}
	if b.f.tightOvershoot {
		b.mu.Lock()
		b.advance(now)
		enough := n <= b.tokens
		b.mu.Unlock()
		if enough {
			b.mu.Lock()
			b.tokens -= n
			b.granted(now, n)
			b.mu.Unlock()
			return spi.Grant()
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.advance(now)
	if n > b.cap {
		return spi.RefuseNever()
	}
	enough := b.tokens >= n
	switch {
	case b.f.bulkOffByOne && n >= 4:
		enough = b.tokens >= n-1
	case b.f.floatCompare:
		enough = float64(b.tokens) >= float64(n)
	}
	if enough {
		b.tokens = max(b.tokens-n, 0)
		b.granted(now, n)
		return spi.Grant()
	}
	deficit := max(n-b.tokens, 1)
	periods := deficit / b.rate
	if deficit%b.rate != 0 {
		periods++
	}
	if b.f.lateHint {
		periods++
	}
	if b.f.refusalConsumes && b.tokens > 0 {
		defer func() { b.tokens-- }()
	}
	period := b.period
	if b.f.staleHintPeriod {
		period = b.firstPeriod
	}
	if periods > math.MaxInt64/int64(period)-b.k {
		return spi.RefuseUntil(b.origin.Add(math.MaxInt64)) // centuries away
	}
	at := b.origin.Add(time.Duration(b.k+periods) * period)
	if b.f.earlyHint {
		at = at.Add(-1)
	}
	return spi.RefuseUntil(at)
}

func (b *bucket) Release(time.Time, int64) {}

// Cancel gives back what the grants made at now can give back (see
// bucketGrant): nothing if none is left, and never above the capacity.
// The other grants' bounds are lowered to what the bucket can still take;
// the bound of those made at now falls by what they gave back.
func (b *bucket) Cancel(now time.Time, n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.advance(now)
	i := slices.IndexFunc(b.grants, func(g bucketGrant) bool { return g.at.Equal(now) })
	var r int64
	switch {
	case b.f.naiveRefund || b.f.doubleCancel:
		r = n
	case i >= 0:
		r = min(n, b.grants[i].n, b.grants[i].back)
	}
	b.tokens = satAdd(b.tokens, r)
	if b.f.cancelOvercredit {
		b.tokens = satAdd(b.tokens, 1)
	}
	if !b.f.doubleCancel {
		b.tokens = min(b.tokens, b.cap)
	}
	b.clamped(i)
	if i >= 0 {
		i = slices.IndexFunc(b.grants, func(g bucketGrant) bool { return g.at.Equal(now) }) // clamped compacts
		g := &b.grants[i]
		g.n -= n
		if g.back < unbounded {
			g.back = max(g.back-r, 0)
		}
		if g.n <= 0 {
			b.grants = slices.Delete(b.grants, i, i+1)
		}
	}
}

func (b *bucket) Reconfigure(now time.Time, p spi.Params) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.advance(now)
	if (p["rate"] != b.rate || b.f.periodOf(p["period"]) != b.period) && !b.f.keepPhaseOnCadence {
		b.origin, b.k = now, 0
	}
	raise := p["cap"] - b.cap
	b.cap, b.rate, b.period = p["cap"], p["rate"], b.f.periodOf(p["period"])
	if !b.f.noClampOnLower {
		b.tokens = min(b.tokens, b.cap)
	}
	switch {
	case b.f.freeBurst:
		b.tokens = b.cap
	case b.f.refillOnRaise && raise > 0:
		b.tokens += raise
	}
	b.clamped(-1)
	return nil
}

func (b *bucket) Snapshot(now time.Time) spi.Snapshot {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.advance(now)
	if b.f.staleSnap {
		return spi.Snapshot{Kind: "fakebucket", Limit: b.firstCap, InUse: b.firstCap - b.tokens, Available: max(min(b.tokens, b.firstCap), 0)}
	}
	if b.f.inUseZero {
		return spi.Snapshot{Kind: "fakebucket", Limit: b.cap, InUse: 0, Available: max(b.tokens, 0)}
	}
	return spi.Snapshot{Kind: "fakebucket", Limit: b.cap, InUse: b.cap - b.tokens, Available: max(b.tokens, 0)}
}

func bucketHarness(f bucketFaults) fakeHarness {
	const tick = 100 * time.Millisecond
	return fakeHarness{
		kind: fakeKind{name: "fakebucket", class: spi.ClassRate, keys: []string{"cap", "period", "rate"},
			build: func(p spi.Params, now time.Time) spi.Limiter {
				return &bucket{f: f, cap: p["cap"], rate: p["rate"], period: f.periodOf(p["period"]), origin: now, tokens: p["cap"],
					firstCap: p["cap"], firstPeriod: time.Duration(p["period"])}
			}},
		caps: LimiterCapabilities{
			Class:            spi.ClassRate,
			Params:           func(limit int64) spi.Params { return spi.Params{"cap": limit, "rate": 2, "period": int64(tick)} },
			AltParams:        func(limit int64) spi.Params { return spi.Params{"cap": limit, "rate": 1, "period": int64(3 * tick)} },
			ReconfigureLimit: true,
			Tick:             tick,
			Allowance: func(p spi.Params, from, to time.Time) int64 {
				d, period := int64(to.Sub(from)), p["period"]
				if d <= 0 {
					return 0
				}
				return satMul(p["rate"], d/period+min(d%period, 1))
			},
		},
	}
}

// windowFaults are the ways a fixed window can be broken.
type windowFaults struct {
	// cancelAnyWindow: Cancel takes the units off the current window's
	// count whatever its now says (clamped at zero), so a late Cancel
	// frees units in a window that did not count them.
	cancelAnyWindow bool
	// cancelAcrossCadence: Cancel locates its now on the windows in
	// force, an instant before their origin in the first of them (as a
	// late caller is counted), so the Cancel of a grant made before a
	// change of cadence lands in the first new window: loose when the
	// grant's own window had ended before the change (else its units are
	// in the barrier, which outlasts the first new window).
	cancelAcrossCadence bool
	// lateOwnWindow: a caller more than one window late is counted in
	// the window of its own instant, whose count is gone: it is granted
	// against an empty window and counted nowhere.
	lateOwnWindow bool
	// inUseStale: Snapshot's InUse is the count the previous window
	// ended with (and the barrier), not the current one's.
	inUseStale bool
	// shavedWindow: the window length is shaved by 0.02% (computed in
	// float64) to stay clear of the boundary: a window gained every 5,000.
	shavedWindow bool
}

// lengthOf is the window length the window keeps for the parameter p.
func (f windowFaults) lengthOf(p int64) time.Duration {
	if f.shavedWindow {
		return time.Duration(float64(p) * 0.9998)
	}
	return time.Duration(p)
}

// fixedWindow counts the units granted in each window [origin +
// k*length, origin + (k+1)*length), up to limit. A change of the limit
// keeps the window and its count; a change of cadence at P starts new
// windows at P, and the count so far joins a barrier that counts until
// the latest of the old window's end, P plus the new length (so that its
// units are not freed within the first new window, which no Allowance of
// the new cadence would count) and what the barrier already had. A caller
// behind the current window is counted in it. Parameters: "limit",
// "window".
//
// A Cancel at the instant of its grant takes the units off the count if
// that instant lies in the current window, after the last change of
// cadence: the grant's absence would have left exactly that. Otherwise
// the window that counted the units has passed (or the units are in the
// barrier, which a Cancel does not touch) and it gives back nothing.
type fixedWindow struct {
	f         windowFaults
	mu        sync.Mutex
	limit     int64
	length    time.Duration
	origin    time.Time
	win       int64 // the window the count belongs to
	count     int64
	barrier   int64 // units that count until until
	until     time.Time
	changedAt time.Time // the last change of cadence
	changed   bool
	previous  int64 // inUseStale: the count the previous window ended with
}

// locate returns the window now falls in, or false if now is before the
// origin.
func (w *fixedWindow) locate(now time.Time) (int64, bool) {
	if now.Before(w.origin) {
		return 0, false
	}
	return int64(now.Sub(w.origin) / w.length), true
}

// roll moves the count to now's window if it is a later one.
func (w *fixedWindow) roll(now time.Time) {
	if k, ok := w.locate(now); ok && k > w.win {
		w.win, w.previous, w.count = k, w.count, 0
	}
}

// used is what counts at now: the count (after roll) and the barrier.
func (w *fixedWindow) used(now time.Time) int64 {
	if now.Before(w.until) {
		return w.count + w.barrier
	}
	return w.count
}

func (w *fixedWindow) TryAcquire(now time.Time, n int64) spi.Decision {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.roll(now)
	if n > w.limit {
		return spi.RefuseNever()
	}
	if k, ok := w.locate(now); w.f.lateOwnWindow && ok && k < w.win-1 {
		return spi.Grant()
	}
	if n <= w.limit-w.used(now) {
		w.count += n
		return spi.Grant()
	}
	// Usage falls only when the window ends or the barrier expires.
	end := w.origin.Add(time.Duration(w.win+1) * w.length)
	at := []time.Time{end}
	if w.barrier > 0 && w.until.After(now) {
		at = append(at, w.until)
	}
	slices.SortFunc(at, time.Time.Compare)
	for _, t := range at {
		u := int64(0)
		if t.Before(end) {
			u += w.count
		}
		if t.Before(w.until) {
			u += w.barrier
		}
		if n <= w.limit-u {
			return spi.RefuseUntil(t)
		}
	}
	panic("fixedWindow: nothing counts after the window and the barrier")
}

func (w *fixedWindow) Release(time.Time, int64) {}

func (w *fixedWindow) Cancel(now time.Time, n int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case w.f.cancelAnyWindow:
	case w.f.cancelAcrossCadence:
		if k, _ := w.locate(now); k != w.win {
			return
		}
	default:
		if k, ok := w.locate(now); !ok || k != w.win || (w.changed && !now.After(w.changedAt)) {
			return
		}
	}
	w.count = max(w.count-n, 0)
}

func (w *fixedWindow) Reconfigure(now time.Time, p spi.Params) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.roll(now)
	w.limit = p["limit"]
	if length := w.f.lengthOf(p["window"]); length != w.length {
		if !now.Before(w.until) {
			w.barrier = 0
		}
		if w.count > 0 || w.barrier > 0 {
			w.barrier += w.count
			end := w.origin.Add(time.Duration(w.win+1) * w.length)
			for _, t := range []time.Time{end, now.Add(length)} {
				if t.After(w.until) {
					w.until = t
				}
			}
		}
		w.length, w.origin, w.win, w.count = length, now, 0, 0
		w.changed, w.changedAt = true, now
	}
	return nil
}

func (w *fixedWindow) Snapshot(now time.Time) spi.Snapshot {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.roll(now)
	u := w.used(now)
	if w.f.inUseStale {
		return spi.Snapshot{Kind: "fakewindow", Limit: w.limit, InUse: u - w.count + w.previous, Available: max(w.limit-u, 0)}
	}
	return spi.Snapshot{Kind: "fakewindow", Limit: w.limit, InUse: u, Available: max(w.limit-u, 0)}
}

func windowHarness(f windowFaults) fakeHarness {
	const tick = 100 * time.Millisecond
	return fakeHarness{
		kind: fakeKind{name: "fakewindow", class: spi.ClassRate, keys: []string{"limit", "window"},
			build: func(p spi.Params, now time.Time) spi.Limiter {
				return &fixedWindow{f: f, limit: p["limit"], length: f.lengthOf(p["window"]), origin: now}
			}},
		caps: LimiterCapabilities{
			Class:            spi.ClassRate,
			Params:           func(limit int64) spi.Params { return spi.Params{"limit": limit, "window": int64(tick)} },
			AltParams:        func(limit int64) spi.Params { return spi.Params{"limit": limit, "window": int64(3 * tick)} },
			ReconfigureLimit: true,
			RaiseFreesUnits:  true,
			Tick:             tick,
			Allowance: func(p spi.Params, from, to time.Time) int64 {
				d, length := int64(to.Sub(from)), p["window"]
				if d <= 0 {
					return 0
				}
				return satMul(p["limit"], d/length+min(d%length, 1))
			},
		},
	}
}
