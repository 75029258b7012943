package window

import (
	"math"
	"time"
)

// maxIndex bounds step indices, so that they fit the 62 bits a sliding
// window's head word keeps for them. It is reached only 2^62 steps after the
// origin (146 years of 1ns segments); from there on time stops for the
// limiter, which only makes it stricter.
const maxIndex = 1<<62 - 1

// grid divides time into equal steps from an origin: step i is
// [at(i), at(i+1)). Instants before the origin belong to step 0.
type grid struct {
	origin time.Time
	step   int64 // nanoseconds, > 0
}

// locate returns the step containing now, and whether now is before the
// origin.
func (g *grid) locate(now time.Time) (i int64, before bool) {
	e := int64(now.Sub(g.origin)) // saturates
	if e < 0 {
		return 0, true
	}
	return min(e/g.step, maxIndex), false
}

// at returns the start of step i (saturating far in the future).
func (g *grid) at(i int64) time.Time {
	if i > math.MaxInt64/g.step {
		return g.origin.Add(math.MaxInt64)
	}
	return g.origin.Add(time.Duration(i * g.step))
}

// later returns the later of a and b.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// satAdd adds two non-negative quantities, saturating at math.MaxInt64, so
// that a pathological sum of inherited usage errs on the strict side.
func satAdd(a, b int64) int64 {
	if s := a + b; s >= a {
		return s
	}
	return math.MaxInt64
}
