package plugin

import (
	"math"
	"testing"
	"time"

	"github.com/sluicerpc/sluice/spi"
)

// An instant the wire cannot carry crosses it as the nearest one it can:
// a RetryAt after 2262 stays in the future (it crossed as one in 1737,
// "retry now"), one before 1677 stays in the past, and every instant in
// between, the zero time included, crosses exactly.
func TestInstantsBeyondTheWireSaturate(t *testing.T) {
	now := time.Unix(1_800_000_000, 123)
	for _, tt := range []struct {
		name     string
		in, want time.Time
	}{
		{"zero", time.Time{}, time.Time{}},
		{"now", now, now},
		{"the latest instant", time.Unix(0, math.MaxInt64), time.Unix(0, math.MaxInt64)},
		{"the earliest instant", time.Unix(0, math.MinInt64), time.Unix(0, math.MinInt64)},
		{"a nanosecond after the latest", time.Unix(0, math.MaxInt64).Add(1), time.Unix(0, math.MaxInt64)},
		{"the year 3000", time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC), time.Unix(0, math.MaxInt64)},
		{"a RetryAt 2^53 seconds away", now.Add(time.Duration(math.MaxInt64)).Add(time.Duration(math.MaxInt64)), time.Unix(0, math.MaxInt64)},
		{"the year 1000", time.Date(1000, 1, 1, 0, 0, 0, 0, time.UTC), time.Unix(0, math.MinInt64)},
	} {
		got := fromTime(toTime(tt.in))
		if !got.Equal(tt.want) {
			t.Errorf("%s: %v crossed as %v, want %v", tt.name, tt.in, got, tt.want)
		}
		d := fromDecision(toDecision(spi.Decision{Hint: spi.HintAt, RetryAt: tt.in}))
		if !d.RetryAt.Equal(tt.want) {
			t.Errorf("%s: a decision's RetryAt %v crossed as %v, want %v", tt.name, tt.in, d.RetryAt, tt.want)
		}
		if tt.in.After(now) && !d.RetryAt.After(now) {
			t.Errorf("%s: a RetryAt in the future crossed as %v, not after %v", tt.name, d.RetryAt, now)
		}
	}
}
