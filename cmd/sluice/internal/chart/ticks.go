package chart

import (
	"math"
	"strconv"
)

// niceStep returns a step of 1, 2 or 5 times a power of ten such that
// [0, span] holds at most maxTicks+1 ticks of it.
func niceStep(span float64, maxTicks int) float64 {
	if span <= 0 || maxTicks < 1 {
		return 1
	}
	raw := span / float64(maxTicks)
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}

// axisMax is the top of an axis whose data reach max: a whole number of
// steps, at least one, and the step.
func axisMax(max float64, maxTicks int) (top, step float64) {
	if !(max > 0) {
		max = 1
	}
	step = niceStep(max, maxTicks)
	top = math.Ceil(max/step-1e-9) * step
	return top, step
}

// ticks returns 0, step, 2·step ... up to top.
func ticks(top, step float64) []float64 {
	var out []float64
	for i := 0; ; i++ {
		v := float64(i) * step
		if v > top+step*1e-9 {
			return out
		}
		out = append(out, v)
	}
}

// label formats a tick value with the decimals its step needs.
func label(v, step float64) string {
	dec := 0
	for s := step; s < 1-1e-9 && dec < 6; s *= 10 {
		dec++
	}
	return strconv.FormatFloat(v, 'f', dec, 64)
}
