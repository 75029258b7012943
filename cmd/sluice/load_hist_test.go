package main

import (
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLatencyHistBuckets: every value lands in a bucket whose upper bound
// is at least the value and within 1/16 of it; buckets are in order.
func TestLatencyHistBuckets(t *testing.T) {
	prev := -1
	for v := int64(0); v < int64(histMax); v = v + 1 + v/7 {
		i := histIndex(v)
		require.GreaterOrEqual(t, i, prev, "v=%d", v)
		require.Less(t, i, histBuckets)
		prev = i
		up := int64(histUpper(i))
		require.GreaterOrEqual(t, up, v, "v=%d bucket %d", v, i)
		require.LessOrEqual(t, float64(up-v), float64(v)/16, "v=%d bucket %d upper %d", v, i, up)
		if i > 0 {
			require.Less(t, int64(histUpper(i-1)), v, "v=%d is above the previous bucket", v)
		}
	}
	assert.Equal(t, histBuckets-1, histIndex(int64(histMax)+12345), "longer values land in the last bucket")
}

// TestLatencyHistQuantiles: quantiles of a uniform spread are within the
// bucket error; memory is the fixed array whatever the count; record
// does not allocate.
func TestLatencyHistQuantiles(t *testing.T) {
	var h latencyHist
	for i := 1; i <= 100000; i++ {
		h.record(time.Duration(i) * time.Microsecond)
	}
	assert.EqualValues(t, 100000, h.count())
	for _, q := range []float64{0.5, 0.9, 0.99, 0.999} {
		want := q * 100000 * float64(time.Microsecond)
		got := float64(h.quantile(q))
		assert.GreaterOrEqual(t, got, want, "q=%v", q)
		assert.LessOrEqual(t, got, want*(1+1.0/16), "q=%v", q)
	}
	assert.Equal(t, time.Microsecond, h.minimum())
	assert.Equal(t, 100*time.Millisecond, h.maximum())
	assert.Equal(t, 100*time.Millisecond, h.quantile(1))
	assert.InDelta(t, float64(50*time.Millisecond), float64(h.mean()), float64(time.Microsecond))
	assert.Less(t, unsafe.Sizeof(h), uintptr(6<<10), "a fixed 5 KiB, independent of the count")
	assert.Zero(t, testing.AllocsPerRun(1000, func() { h.record(3 * time.Millisecond) }))

	var win latencyHist
	h.drainInto(&win)
	assert.Zero(t, h.count())
	assert.EqualValues(t, 101001, win.count())
	assert.Equal(t, 100*time.Millisecond, win.maximum())
	var bars uint64
	for _, b := range win.powerBars() {
		bars += b.Count
	}
	assert.EqualValues(t, 101001, bars)
}
