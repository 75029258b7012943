package spi

import "time"

// Clock supplies the current time to components that must read it
// themselves. Limiters never read a clock: they are handed the time.
type Clock interface {
	Now() time.Time
}

// SystemClock is the wall clock (with Go's monotonic reading): time.Now.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// MonotonicClock reads only the monotonic clock: its times advance exactly
// as the monotonic clock does from the instant the clock was made, and
// ignore later wall-clock steps (NTP, manual changes), which is what rate
// limits want. Reading it costs about half of time.Now (time.Since uses
// the monotonic reading alone). The zero value is not usable; use
// NewMonotonicClock.
type MonotonicClock struct {
	base time.Time
}

// NewMonotonicClock returns a MonotonicClock that starts at time.Now().
func NewMonotonicClock() MonotonicClock { return MonotonicClock{base: time.Now()} }

// Now returns the clock's base plus the monotonic time elapsed since.
func (c MonotonicClock) Now() time.Time { return c.base.Add(time.Since(c.base)) }
