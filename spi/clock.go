package spi

import "time"

// Clock supplies the current time to components that must read it
// themselves. Limiters never read a clock: they are handed the time.
type Clock interface {
	Now() time.Time
}

// SystemClock is the wall clock (with Go's monotonic reading).
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }
