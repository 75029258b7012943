package conformance

import (
	"sync"
	"time"

	"github.com/sluicerpc/sluice/spi"
)

// This file holds the concurrency limiters planted for the classes of bug
// that the first set of fakes (fakes_test.go) was not shaped around: each
// is a correct semaphore under one lock but for one fault, and the faults
// of one class are written to differ from one another.

// semFault is how a plantedSem is broken.
type semFault int

const (
	// leasesExpire: units granted more than a minute (by the now the
	// limiter is given) before a TryAcquire are forgotten, as if their
	// holders had died: the semaphore credits according to time.
	leasesExpire semFault = iota + 1
	// refuseBackwardClock: a TryAcquire whose now is before the latest
	// now seen is refused with HintOnRelease, to be safe: the semaphore
	// debits according to time.
	refuseBackwardClock
	// bulkReleaseShort: a Release of four or more units takes a bulk path
	// that is off by one and returns one unit too few.
	bulkReleaseShort
	// int32Limit: the limit is kept in an int32, so a limit of 2^31 or
	// more is truncated (Snapshot reports the int64 it was given).
	int32Limit
	// overflowingCheck: TryAcquire compares held+n with the limit, which
	// wraps for a request near the int64 edge.
	overflowingCheck
)

// plantedSem is a semaphore under one lock, with one fault.
type plantedSem struct {
	fault   semFault
	mu      sync.Mutex
	limit   int64
	held    int64
	granted time.Time // leasesExpire: the instant of the latest grant
	latest  time.Time // refuseBackwardClock: the latest now seen
}

func (s *plantedSem) TryAcquire(now time.Time, n int64) spi.Decision {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch s.fault {
	case leasesExpire:
		if s.held > 0 && now.Sub(s.granted) > time.Minute {
			s.held = 0
		}
	case refuseBackwardClock:
		if now.Before(s.latest) {
			return spi.RefuseUntilRelease()
		}
		s.latest = now
	}
	limit := s.limit
	if s.fault == int32Limit {
		limit = int64(int32(limit))
	}
	if n > limit {
		return spi.RefuseNever()
	}
	if s.fault == overflowingCheck {
		if s.held+n > limit {
			return spi.RefuseUntilRelease()
		}
	} else if n > limit-s.held {
		return spi.RefuseUntilRelease()
	}
	s.held += n
	s.granted = now
	return spi.Grant()
}

func (s *plantedSem) Release(_ time.Time, n int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n > s.held {
		panic("plantedSem: released more than held")
	}
	if s.fault == bulkReleaseShort && n >= 4 {
		s.held -= n - 1 // the bulk path's off-by-one
		return
	}
	s.held -= n
}

func (s *plantedSem) Cancel(now time.Time, n int64) { s.Release(now, n) }

func (s *plantedSem) Reconfigure(_ time.Time, p spi.Params) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.limit = p["limit"]
	return nil
}

func (s *plantedSem) Snapshot(time.Time) spi.Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	return spi.Snapshot{Kind: "plantedsem", Limit: s.limit, InUse: s.held, Available: max(s.limit-s.held, 0)}
}

func plantedSemHarness(f semFault) fakeHarness {
	return fakeHarness{
		kind: fakeKind{name: "plantedsem", class: spi.ClassConcurrency, keys: []string{"limit"},
			build: func(p spi.Params, _ time.Time) spi.Limiter { return &plantedSem{fault: f, limit: p["limit"]} }},
		caps: LimiterCapabilities{
			Class:            spi.ClassConcurrency,
			Params:           func(limit int64) spi.Params { return spi.Params{"limit": limit} },
			ReconfigureLimit: true,
		},
	}
}
