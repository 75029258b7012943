package conformance

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicerpc/sluice/spi"
)

// This file holds small limiters for the suite's own tests: a correct
// semaphore and a correct discrete token bucket, each with switches that
// break one contract on purpose.

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
}

// sem is a concurrency limiter: held units against a limit.
type sem struct {
	f     semFaults
	held  atomic.Int64
	limit atomic.Int64
	first int64      // the limit given to New
	mu    sync.Mutex // serializes the correct acquire path
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
	if s.held.Load()+n > s.limit.Load() {
		return spi.RefuseUntilRelease()
	}
	s.held.Add(n)
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
	doubleCancel  bool // Cancel is not clamped at the capacity
	overshoot     bool // check, then decrement: concurrent acquirers overdraw

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
}

// bucket is a discrete token bucket: every period boundary after origin
// adds rate tokens, up to capacity. Parameters: "cap", "rate", "period".
type bucket struct {
	f      bucketFaults
	mu     sync.Mutex
	cap    int64
	rate   int64
	period time.Duration
	origin time.Time
	k      int64 // boundaries already credited
	tokens int64

	firstCap    int64         // the capacity given to New
	firstPeriod time.Duration // the period given to New
}

func (b *bucket) advance(now time.Time) {
	if k := int64(now.Sub(b.origin) / b.period); k > b.k {
		b.tokens = min(b.cap, b.tokens+(k-b.k)*b.rate)
		b.k = k
	} else if b.f.lateRewinds {
		b.k = k
	}
}

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
	if b.tokens >= n {
		b.tokens -= n
		return spi.Grant()
	}
	periods := (n - b.tokens + b.rate - 1) / b.rate
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
	at := b.origin.Add(time.Duration(b.k+periods) * period)
	if b.f.earlyHint {
		at = at.Add(-1)
	}
	return spi.RefuseUntil(at)
}

func (b *bucket) Release(time.Time, int64) {}

func (b *bucket) Cancel(now time.Time, n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.advance(now)
	b.tokens += n
	if b.f.cancelOvercredit {
		b.tokens++
	}
	if !b.f.doubleCancel {
		b.tokens = min(b.tokens, b.cap)
	}
}

func (b *bucket) Reconfigure(now time.Time, p spi.Params) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.advance(now)
	if (p["rate"] != b.rate || time.Duration(p["period"]) != b.period) && !b.f.keepPhaseOnCadence {
		b.origin, b.k = now, 0
	}
	raise := p["cap"] - b.cap
	b.cap, b.rate, b.period = p["cap"], p["rate"], time.Duration(p["period"])
	if !b.f.noClampOnLower {
		b.tokens = min(b.tokens, b.cap)
	}
	switch {
	case b.f.freeBurst:
		b.tokens = b.cap
	case b.f.refillOnRaise && raise > 0:
		b.tokens += raise
	}
	return nil
}

func (b *bucket) Snapshot(now time.Time) spi.Snapshot {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.advance(now)
	if b.f.staleSnap {
		return spi.Snapshot{Kind: "fakebucket", Limit: b.firstCap, InUse: b.firstCap - b.tokens, Available: max(min(b.tokens, b.firstCap), 0)}
	}
	return spi.Snapshot{Kind: "fakebucket", Limit: b.cap, InUse: b.cap - b.tokens, Available: max(b.tokens, 0)}
}

func bucketHarness(f bucketFaults) fakeHarness {
	const tick = 100 * time.Millisecond
	return fakeHarness{
		kind: fakeKind{name: "fakebucket", class: spi.ClassRate, keys: []string{"cap", "period", "rate"},
			build: func(p spi.Params, now time.Time) spi.Limiter {
				return &bucket{f: f, cap: p["cap"], rate: p["rate"], period: time.Duration(p["period"]), origin: now, tokens: p["cap"],
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
				return p["rate"] * ((d + period - 1) / period)
			},
		},
	}
}
