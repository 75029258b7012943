package main

import (
	"math"
	"math/bits"
	"sync/atomic"
	"time"
)

// latencyHist is an HDR-like histogram of durations with a fixed set of
// buckets: exact below 16 ns, then 16 sub-buckets per power of two (a
// relative error of at most 1/16, 6.25%), up to histMax; longer values
// land in the last bucket. Its memory (histBuckets counters, about 5 KiB)
// does not depend on how many values it records. Record is safe for
// concurrent use, lock-free and allocation-free (a few atomic adds); the
// readers (quantile, merge, buckets) see each counter atomically but not
// all of them at one instant, which is what a live progress line needs.
type latencyHist struct {
	counts [histBuckets]atomic.Uint64
	n      atomic.Uint64
	sum    atomic.Uint64 // nanoseconds
	max    atomic.Int64
	min    atomic.Int64 // 0: nothing recorded (a 0 ns value is stored as 1 below)
}

const (
	histSubBits = 4
	histSub     = 1 << histSubBits // sub-buckets per power of two
	histMaxExp  = 42               // 2^42 ns: about 73 minutes
	histBuckets = (histMaxExp - histSubBits + 1) * histSub
	histMax     = time.Duration(1)<<histMaxExp - 1
)

// histIndex is the bucket of v nanoseconds.
func histIndex(v int64) int {
	if v < histSub {
		return int(max(v, 0))
	}
	if v > int64(histMax) {
		v = int64(histMax)
	}
	e := bits.Len64(uint64(v)) - 1 // e >= histSubBits
	sub := int(v>>(e-histSubBits)) & (histSub - 1)
	return (e-histSubBits+1)*histSub + sub
}

// histUpper is the largest value of bucket i (the value a quantile in it
// is reported as, so that quantiles never understate).
func histUpper(i int) time.Duration {
	if i < histSub {
		return time.Duration(i)
	}
	e := i/histSub + histSubBits - 1
	sub := int64(i % histSub)
	lo := (histSub + sub) << (e - histSubBits)
	return time.Duration(lo + int64(1)<<(e-histSubBits) - 1)
}

// record adds one value.
func (h *latencyHist) record(d time.Duration) {
	v := int64(d)
	h.counts[histIndex(v)].Add(1)
	h.n.Add(1)
	h.sum.Add(uint64(max(v, 0)))
	for m := h.max.Load(); v > m && !h.max.CompareAndSwap(m, v); m = h.max.Load() {
	}
	v = max(v, 1)
	for m := h.min.Load(); (m == 0 || v < m) && !h.min.CompareAndSwap(m, v); m = h.min.Load() {
	}
}

// count is the number of values recorded.
func (h *latencyHist) count() uint64 { return h.n.Load() }

// quantile returns the value at or below which a fraction q (0..1) of the
// recorded values lie, as its bucket's upper bound but never above the
// largest value recorded; 0 when nothing was recorded.
func (h *latencyHist) quantile(q float64) time.Duration {
	n := h.n.Load()
	if n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(n)))
	rank = min(max(rank, 1), n)
	var seen uint64
	for i := range h.counts {
		seen += h.counts[i].Load()
		if seen >= rank {
			return min(histUpper(i), time.Duration(h.max.Load()))
		}
	}
	return time.Duration(h.max.Load())
}

// mean is the mean of the recorded values; 0 when there is none.
func (h *latencyHist) mean() time.Duration {
	n := h.n.Load()
	if n == 0 {
		return 0
	}
	return time.Duration(h.sum.Load() / n)
}

// minimum and maximum are the least and largest values recorded; 0 when
// there is none.
func (h *latencyHist) minimum() time.Duration {
	if h.n.Load() == 0 {
		return 0
	}
	return time.Duration(h.min.Load())
}

func (h *latencyHist) maximum() time.Duration { return time.Duration(h.max.Load()) }

// drainInto moves h's counts into into (h is left empty) and returns
// them as a separate histogram: the live progress line reads the last
// interval from it. Values recorded while it runs land in either.
func (h *latencyHist) drainInto(into *latencyHist) {
	for i := range h.counts {
		if c := h.counts[i].Swap(0); c > 0 {
			into.counts[i].Add(c)
		}
	}
	into.n.Add(h.n.Swap(0))
	into.sum.Add(h.sum.Swap(0))
	if m := h.max.Swap(0); m > into.max.Load() {
		into.max.Store(m)
	}
	if m := h.min.Swap(0); m != 0 && (into.min.Load() == 0 || m < into.min.Load()) {
		into.min.Store(m)
	}
}

// reset empties h; not concurrently with record.
func (h *latencyHist) reset() { *h = latencyHist{} }

// histBar is one power-of-two range of the final text histogram.
type histBar struct {
	Upper time.Duration // values up to this (inclusive)
	Count uint64
}

// powerBars sums the buckets into power-of-two ranges (1 ns, 2 ns, 4 ns
// ... upper bounds 2^k-1), from the first nonempty to the last.
func (h *latencyHist) powerBars() []histBar {
	var bars []histBar
	for i := range h.counts {
		c := h.counts[i].Load()
		up := histUpper(i)
		k := bits.Len64(uint64(up)) // range [2^(k-1), 2^k - 1]
		ub := time.Duration(1)<<k - 1
		if len(bars) == 0 || bars[len(bars)-1].Upper != ub {
			if c == 0 && len(bars) == 0 {
				continue
			}
			bars = append(bars, histBar{Upper: ub})
		}
		bars[len(bars)-1].Count += c
	}
	for len(bars) > 0 && bars[len(bars)-1].Count == 0 {
		bars = bars[:len(bars)-1]
	}
	return bars
}
