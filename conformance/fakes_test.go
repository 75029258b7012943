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

// semFaults are the ways a semaphore can be broken.
type semFaults struct {
	overshoot    bool // check, then increment: concurrent acquirers overshoot
	doubleCredit bool // Release below zero is credited instead of panicking
	revoke       bool // a shrink drops the holders above the new limit
	lyingSnap    bool // Snapshot reports nothing in use
}

// sem is a concurrency limiter: held units against a limit.
type sem struct {
	f     semFaults
	held  atomic.Int64
	limit atomic.Int64
	mu    sync.Mutex // serializes the correct acquire path
}

func (s *sem) TryAcquire(_ time.Time, n int64) spi.Decision {
	limit := s.limit.Load()
	if n > limit {
		return spi.RefuseNever()
	}
	if s.f.overshoot {
		if s.held.Load()+n > limit {
			return spi.RefuseUntilRelease()
		}
		runtime.Gosched()
		s.held.Add(n)
		return spi.Grant()
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
				s := &sem{f: f}
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
}

func (b *bucket) advance(now time.Time) {
	if k := int64(now.Sub(b.origin) / b.period); k > b.k {
		b.tokens = min(b.cap, b.tokens+(k-b.k)*b.rate)
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
	at := b.origin.Add(time.Duration(b.k+periods) * b.period)
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
	if !b.f.doubleCancel {
		b.tokens = min(b.tokens, b.cap)
	}
}

func (b *bucket) Reconfigure(now time.Time, p spi.Params) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.advance(now)
	if p["rate"] != b.rate || time.Duration(p["period"]) != b.period {
		b.origin, b.k = now, 0
	}
	raise := p["cap"] - b.cap
	b.cap, b.rate, b.period = p["cap"], p["rate"], time.Duration(p["period"])
	b.tokens = min(b.tokens, b.cap)
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
	return spi.Snapshot{Kind: "fakebucket", Limit: b.cap, InUse: b.cap - b.tokens, Available: max(b.tokens, 0)}
}

func bucketHarness(f bucketFaults) fakeHarness {
	const tick = 100 * time.Millisecond
	return fakeHarness{
		kind: fakeKind{name: "fakebucket", class: spi.ClassRate, keys: []string{"cap", "period", "rate"},
			build: func(p spi.Params, now time.Time) spi.Limiter {
				return &bucket{f: f, cap: p["cap"], rate: p["rate"], period: time.Duration(p["period"]), origin: now, tokens: p["cap"]}
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
