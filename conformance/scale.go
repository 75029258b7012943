package conformance

import (
	"math"
	"time"

	"pgregory.net/rapid"

	"github.com/sluicerpc/sluice/spi"
)

// This file holds what the property checks draw beyond small numbers: the
// limits a kind accepts at every scale up to its edge, units taken many at
// a time, and (for concurrency kinds, which must ignore it) any time.

// limitCandidates are the scales beyond the small limits that the property
// checks try, each kept only if the kind accepts it: hundreds, thousands,
// the 32-bit edges, 2^53 (the last integer a float64 holds exactly) and
// the int64 edge.
var limitCandidates = []int64{
	100, 1000, 4096, 65536,
	math.MaxInt32, math.MaxInt32 + 1, math.MaxUint32, math.MaxUint32 + 1,
	1 << 53, 1<<53 + 1, 1 << 62, math.MaxInt64 - 1, math.MaxInt64,
}

// accepts reports whether the kind validates caps.Params(limit), counting a
// panic of Params or Validate as a refusal: a kind bounds its limits by
// rejecting larger ones, and a capabilities function may reject them by
// panicking.
func accepts(h LimiterHarness, limit int64) bool {
	return acceptsParams(h, h.Capabilities().Params, limit)
}

// acceptsParams reports whether the kind validates params(limit), a panic
// counting as a refusal (see accepts).
func acceptsParams(h LimiterHarness, params func(int64) spi.Params, limit int64) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	return h.Kind().Validate(params(limit)) == nil
}

// largeLimits returns the limits above 64 that the kind accepts among
// limitCandidates, and the largest limit it accepts (its edge), found by
// bisection between the largest accepted candidate and the next refused
// one. The suite holds a kind to every limit its Validate accepts: the
// kernel publishes any of them. It returns nothing for a kind that refuses
// 100.
func largeLimits(h LimiterHarness) []int64 {
	var limits []int64
	refused := int64(0) // the smallest refused candidate above the last accepted
	for _, c := range limitCandidates {
		if accepts(h, c) {
			limits = append(limits, c)
			refused = 0
		} else if refused == 0 {
			refused = c
		}
	}
	if len(limits) == 0 {
		return nil
	}
	last := limits[len(limits)-1]
	if refused > last {
		lo, hi := last, refused // lo accepted, hi refused
		for hi-lo > 1 {
			mid := lo + (hi-lo)/2
			if accepts(h, mid) {
				lo = mid
			} else {
				hi = mid
			}
		}
		if lo != last {
			limits = append(limits, lo)
		}
	}
	return limits
}

// drawLimit draws a limit: a small one (1 to 8) two times in three, else
// one of large, the kind's accepted large limits.
func drawLimit(rt *rapid.T, large []int64, label string) int64 {
	if len(large) == 0 || rapid.IntRange(0, 2).Draw(rt, label+"Scale") < 2 {
		return rapid.Int64Range(1, 8).Draw(rt, label)
	}
	return rapid.SampledFrom(large).Draw(rt, label)
}

// drawUnits draws how many units a call takes or asks: one to three half
// the time, else many at once: up to the limit, exactly what the limit
// leaves (room) and one more, the whole limit and one more, or the largest
// int64 (whose sum with anything held overflows).
func drawUnits(rt *rapid.T, limit, room int64, label string) int64 {
	switch rapid.IntRange(0, 7).Draw(rt, label+"Shape") {
	case 0, 1, 2, 3:
		return rapid.Int64Range(1, 3).Draw(rt, label)
	case 4:
		return rapid.Int64Range(1, max(limit, 1)).Draw(rt, label)
	case 5:
		return satAdd(max(room, 1), rapid.Int64Range(0, 1).Draw(rt, label))
	case 6:
		return satAdd(limit, rapid.Int64Range(0, 1).Draw(rt, label))
	default:
		return math.MaxInt64
	}
}

// drawAnyTime draws an instant for a call to a concurrency limiter, which
// must ignore it (spi.ClassConcurrency): the zero time, an instant near
// start, hours or years later or earlier, or the extremes time.Time can
// hold. Consecutive calls get unrelated instants, so time goes backwards
// as often as forwards.
func drawAnyTime(rt *rapid.T, label string) time.Time {
	switch rapid.IntRange(0, 4).Draw(rt, label) {
	case 0:
		return time.Time{}
	case 1:
		return start.Add(time.Duration(rapid.Int64Range(-int64(time.Minute), int64(time.Minute)).Draw(rt, label+"Near")))
	case 2:
		return start.Add(time.Duration(rapid.Int64Range(math.MinInt64, math.MaxInt64).Draw(rt, label+"Far")))
	case 3:
		return time.Unix(rapid.Int64Range(-1<<40, 1<<40).Draw(rt, label+"Unix"), 0)
	default:
		return rapid.SampledFrom([]time.Time{
			time.Unix(math.MinInt64, 0), time.Unix(math.MaxInt64, 999_999_999), time.Unix(0, 0),
		}).Draw(rt, label+"Edge")
	}
}

// satAdd adds two non-negative numbers, saturating at math.MaxInt64.
func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// fits reports whether n more units fit with held units under limit,
// without overflowing.
func fits(held, n, limit int64) bool { return n <= limit-held }

// satMul multiplies two non-negative numbers, saturating at math.MaxInt64.
func satMul(a, b int64) int64 {
	if a != 0 && b > math.MaxInt64/a {
		return math.MaxInt64
	}
	return a * b
}
