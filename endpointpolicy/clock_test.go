package endpointpolicy_test

import (
	"sync"
	"time"

	"github.com/sluicerpc/sluice/spi"
)

// fakeClock is a manual spi.Clock, safe for concurrent use.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

var _ spi.Clock = (*fakeClock)(nil)

func newFakeClock() *fakeClock { return &fakeClock{now: time.Unix(1_700_000_000, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// panicClock panics on every read.
type panicClock struct{}

func (panicClock) Now() time.Time { panic("clock broke") }

// Outcomes used across the tests.
var (
	success     = spi.AttemptOutcome{Kind: spi.OutcomeSuccess, ResponseObserved: true}
	sendFailure = spi.AttemptOutcome{Kind: spi.OutcomeSendFailure}
	goAway      = spi.AttemptOutcome{Kind: spi.OutcomeGoAway}
	cancelled   = spi.AttemptOutcome{Kind: spi.OutcomeCancelled}
)

func remote(code uint8) spi.AttemptOutcome {
	return spi.AttemptOutcome{Kind: spi.OutcomeRemoteError, Code: code, ResponseObserved: true}
}
