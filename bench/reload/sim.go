package main

import (
	"fmt"
	"sync/atomic"
	"time"
)

// The simulated timeline every case runs on. Time never comes from the
// wall clock: the driver sets the clock before each tick and every system
// reads it (x/time/rate through explicit AllowN(t, 1), sluice through
// kernel.Config.Clock, sentinel-golang through util.SetClock).
const (
	// Tick is the step of simulated time. At each tick the driver first
	// runs the events due then (the configuration change among them),
	// then attempts admissions greedily until one is refused.
	Tick = time.Millisecond
	// MaxAttemptsPerTick caps the attempts of one tick, so that an
	// unlimited configuration terminates. It is far above anything a
	// limited case can admit in one tick (the largest is a full bucket
	// of 200); a measured tick that reaches it is reported as saturated.
	MaxAttemptsPerTick = 1000
	// Publish is P - T0: the configuration change is published at
	// T0 + 2.5 s, after 2.5 s of greedy traffic under the old
	// configuration, so every old limiter is in its steady state and
	// drained. P falls on a whole 10 ms (the last grant of a 100/s
	// bucket was at P - 10 ms, so it carries exactly 1 token), in the
	// middle of a 1 s fixed window (windows start at T0 + k s), at the
	// start of a 100 ms sliding segment and of a 500 ms sentinel bucket.
	Publish = 2500 * time.Millisecond
	// Measure is the length of the measured interval [P, P + Measure).
	Measure = time.Second
)

// T0 is the start of the timeline: a whole second of Unix time, so that
// sentinel-golang's 500 ms statistic buckets (aligned to Unix
// milliseconds) are aligned to T0 like sluice's windows (aligned to the
// Enable instant, T0).
var T0 = time.Unix(1_700_000_000, 0)

// Clock is the simulated clock: it reads what the driver set, nothing else.
// It is safe for concurrent use, although every case runs on one
// goroutine.
type Clock struct {
	ns atomic.Int64 // Unix nanoseconds
}

// NewClock returns a clock reading T0.
func NewClock() *Clock {
	c := &Clock{}
	c.Set(T0)
	return c
}

// Now returns the simulated time (spi.Clock).
func (c *Clock) Now() time.Time { return time.Unix(0, c.ns.Load()) }

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) { c.ns.Store(t.UnixNano()) }

// Subject is one case's system under test, as the driver sees it.
type Subject struct {
	// Admit attempts one admission at now and reports whether it was
	// granted.
	Admit func(now time.Time) (bool, error)
	// Events run at their instants, before that tick's admissions. The
	// configuration change at Publish is one of them.
	Events []Event
	// Close releases what the subject holds (nil if nothing).
	Close func() error
}

// Event is something a case does at one instant of the timeline.
type Event struct {
	At time.Duration // offset from T0; a multiple of Tick
	Do func(now time.Time) error
}

// Result is what the driver measured for one case.
type Result struct {
	// Before is the number of admissions in [T0, P), under the old
	// configuration.
	Before int64
	// Admitted is the number of admissions in [P, P + Measure).
	Admitted int64
	// Saturated reports that some tick of [P, P + Measure) reached
	// MaxAttemptsPerTick: the count is then only a lower bound.
	Saturated bool
}

// Drive runs s on clock from T0 to P + Measure in steps of Tick and counts
// the admissions before and after the publication instant P.
func Drive(clock *Clock, s Subject) (Result, error) {
	var r Result
	events := s.Events
	for i := range events {
		if events[i].At%Tick != 0 || events[i].At < 0 || events[i].At >= Publish+Measure {
			return r, fmt.Errorf("event at %v is not a tick of the timeline", events[i].At)
		}
		if i > 0 && events[i].At < events[i-1].At {
			return r, fmt.Errorf("events out of order: %v after %v", events[i].At, events[i-1].At)
		}
	}
	for off := time.Duration(0); off < Publish+Measure; off += Tick {
		now := T0.Add(off)
		clock.Set(now)
		for len(events) > 0 && events[0].At == off {
			if err := events[0].Do(now); err != nil {
				return r, fmt.Errorf("event at T0+%v: %w", off, err)
			}
			events = events[1:]
		}
		n := int64(0)
		for n < MaxAttemptsPerTick {
			ok, err := s.Admit(now)
			if err != nil {
				return r, fmt.Errorf("admission at T0+%v: %w", off, err)
			}
			if !ok {
				break
			}
			n++
		}
		if off < Publish {
			r.Before += n
			continue
		}
		r.Admitted += n
		if n == MaxAttemptsPerTick {
			r.Saturated = true
		}
	}
	return r, nil
}
