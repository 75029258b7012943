package concurrency_test

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/limiters/concurrency"
	"github.com/sluicerpc/sluice/spi"
)

// zero is the time passed to every method: a concurrency limiter ignores it.
var zero time.Time

var (
	granted   = spi.Grant()
	onRelease = spi.RefuseUntilRelease()
	never     = spi.RefuseNever()
)

// newHolding returns a limiter with the given limit and held units.
func newHolding(t *testing.T, limit, held int64) *concurrency.Limiter {
	t.Helper()
	l := concurrency.New(limit)
	for range held {
		require.Equal(t, granted, l.TryAcquire(zero, 1))
	}
	require.Equal(t, held, l.Held())
	return l
}

// requireState checks limit and held through both the accessors and
// Snapshot.
func requireState(t *testing.T, l *concurrency.Limiter, limit, held int64) {
	t.Helper()
	require.Equal(t, limit, l.Limit(), "limit")
	require.Equal(t, held, l.Held(), "held")
	require.Equal(t, spi.Snapshot{
		Kind:      concurrency.KindName,
		Limit:     limit,
		InUse:     held,
		Available: max(0, limit-held),
	}, l.Snapshot(zero))
}

// panicMessage runs f and returns the value it panicked with, or fails.
func panicMessage(t *testing.T, f func()) (msg string) {
	t.Helper()
	defer func() {
		v := recover()
		require.NotNil(t, v, "expected a panic")
		msg = fmt.Sprint(v)
	}()
	f()
	return ""
}

func TestTryAcquire(t *testing.T) {
	tests := []struct {
		name     string
		limit    int64
		held     int64
		n        int64
		want     spi.Decision
		wantHeld int64
	}{
		{"first unit", 3, 0, 1, granted, 1},
		{"last unit", 3, 2, 1, granted, 3},
		{"whole limit at once", 3, 0, 3, granted, 3},
		{"several units fitting", 5, 2, 3, granted, 5},
		{"at the limit", 3, 3, 1, onRelease, 3},
		{"would exceed", 3, 2, 2, onRelease, 2},
		{"limit one, held", 1, 1, 1, onRelease, 1},
		{"more than the limit", 3, 0, 4, never, 0},
		{"more than the limit while full", 3, 3, 4, never, 3},
		{"zero units at the limit", 3, 3, 0, granted, 3},
		{"zero units empty", 1, 0, 0, granted, 0},
		{"n above 32 bits is never truncated", 3, 0, 1<<32 + 1, never, 0},
		{"n of max int64", 3, 0, math.MaxInt64, never, 0},
		{"max limit at once", concurrency.MaxLimit, 0, concurrency.MaxLimit, granted, concurrency.MaxLimit},
		{"above max limit", concurrency.MaxLimit, 0, concurrency.MaxLimit + 1, never, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := concurrency.New(tt.limit)
			if tt.held > 0 {
				require.Equal(t, granted, l.TryAcquire(zero, tt.held))
			}
			got := l.TryAcquire(zero, tt.n)
			assert.Equal(t, tt.want, got)
			requireState(t, l, tt.limit, tt.wantHeld)
		})
	}
}

func TestGrantsUpToTheLimit(t *testing.T) {
	for _, limit := range []int64{1, 2, 5, 64} {
		t.Run(fmt.Sprint(limit), func(t *testing.T) {
			l := concurrency.New(limit)
			for i := range limit {
				require.Equal(t, granted, l.TryAcquire(zero, 1), "unit %d", i+1)
				requireState(t, l, limit, i+1)
			}
			for range 3 {
				require.Equal(t, onRelease, l.TryAcquire(zero, 1))
			}
			requireState(t, l, limit, limit)

			// Each release makes room for exactly one more.
			l.Release(zero, 1)
			require.Equal(t, granted, l.TryAcquire(zero, 1))
			require.Equal(t, onRelease, l.TryAcquire(zero, 1))
		})
	}
}

func TestTimeIsIgnored(t *testing.T) {
	l := concurrency.New(1)
	past := time.Unix(0, 0)
	future := time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)
	require.Equal(t, granted, l.TryAcquire(future, 1))
	require.Equal(t, onRelease, l.TryAcquire(past, 1), "time going backwards changes nothing")
	l.Release(past, 1)
	require.Equal(t, granted, l.TryAcquire(time.Now(), 1))
	assert.Equal(t, l.Snapshot(past), l.Snapshot(future))
}

func TestNegativeUnitsPanic(t *testing.T) {
	tests := []struct {
		name string
		call func(l *concurrency.Limiter)
		want string
	}{
		{"TryAcquire -1", func(l *concurrency.Limiter) { l.TryAcquire(zero, -1) }, "concurrency: acquire of negative units -1"},
		{"TryAcquire min int64", func(l *concurrency.Limiter) { l.TryAcquire(zero, math.MinInt64) }, "concurrency: acquire of negative units -9223372036854775808"},
		{"Release -1", func(l *concurrency.Limiter) { l.Release(zero, -1) }, "concurrency: release of negative units -1"},
		{"Cancel -2", func(l *concurrency.Limiter) { l.Cancel(zero, -2) }, "concurrency: release of negative units -2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newHolding(t, 3, 1)
			assert.Equal(t, tt.want, panicMessage(t, func() { tt.call(l) }))
			requireState(t, l, 3, 1)
		})
	}
}

func TestReleaseMoreThanHeldPanics(t *testing.T) {
	tests := []struct {
		name  string
		limit int64
		held  int64
		call  func(l *concurrency.Limiter)
		want  string
	}{
		{"release with nothing held", 3, 0, func(l *concurrency.Limiter) { l.Release(zero, 1) }, "concurrency: released 1 units but only 0 are held"},
		{"release one too many", 3, 2, func(l *concurrency.Limiter) { l.Release(zero, 3) }, "concurrency: released 3 units but only 2 are held"},
		{"cancel one too many", 3, 2, func(l *concurrency.Limiter) { l.Cancel(zero, 3) }, "concurrency: released 3 units but only 2 are held"},
		{"release above 32 bits", 3, 3, func(l *concurrency.Limiter) { l.Release(zero, 1<<32+1) }, "concurrency: released 4294967297 units but only 3 are held"},
		{"release after shrink", 1, 3, func(l *concurrency.Limiter) { l.Release(zero, 4) }, "concurrency: released 4 units but only 3 are held"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newHolding(t, max(tt.limit, tt.held), tt.held)
			l.Resize(tt.limit)
			assert.Equal(t, tt.want, panicMessage(t, func() { tt.call(l) }))
			requireState(t, l, tt.limit, tt.held)
		})
	}
}

func TestDoubleReleasePanicsAndKeepsOtherHolders(t *testing.T) {
	l := newHolding(t, 2, 1)
	require.Equal(t, granted, l.TryAcquire(zero, 1)) // a second holder
	l.Release(zero, 1)
	l.Release(zero, 1)
	requireState(t, l, 2, 0)

	assert.Equal(t, "concurrency: released 1 units but only 0 are held",
		panicMessage(t, func() { l.Release(zero, 1) }))
	requireState(t, l, 2, 0)
	require.Equal(t, granted, l.TryAcquire(zero, 2), "the limiter is still usable after the panic")
}

func TestReleaseZeroIsNoop(t *testing.T) {
	l := newHolding(t, 2, 1)
	l.Release(zero, 0)
	l.Cancel(zero, 0)
	requireState(t, l, 2, 1)

	empty := concurrency.New(1)
	empty.Release(zero, 0)
	requireState(t, empty, 1, 0)
}

func TestCancelBehavesAsRelease(t *testing.T) {
	for _, give := range []struct {
		name string
		back func(l *concurrency.Limiter, n int64)
	}{
		{"Release", func(l *concurrency.Limiter, n int64) { l.Release(zero, n) }},
		{"Cancel", func(l *concurrency.Limiter, n int64) { l.Cancel(zero, n) }},
	} {
		t.Run(give.name, func(t *testing.T) {
			l := concurrency.New(3)
			require.Equal(t, granted, l.TryAcquire(zero, 3))
			require.Equal(t, onRelease, l.TryAcquire(zero, 1))

			give.back(l, 2)
			requireState(t, l, 3, 1)
			require.Equal(t, granted, l.TryAcquire(zero, 2), "the units given back are available again")
			require.Equal(t, onRelease, l.TryAcquire(zero, 1))

			give.back(l, 3)
			requireState(t, l, 3, 0)
		})
	}
}

func TestGrowExposesExactlyTheNewCapacity(t *testing.T) {
	for _, how := range []struct {
		name   string
		resize func(t *testing.T, l *concurrency.Limiter, limit int64)
	}{
		{"Resize", func(_ *testing.T, l *concurrency.Limiter, limit int64) { l.Resize(limit) }},
		{"Reconfigure", func(t *testing.T, l *concurrency.Limiter, limit int64) {
			require.NoError(t, l.Reconfigure(zero, spi.Params{concurrency.ParamLimit: limit}))
		}},
	} {
		t.Run(how.name, func(t *testing.T) {
			// limit 1 -> 3 with 1 holder: exactly 2 more may enter.
			l := newHolding(t, 1, 1)
			require.Equal(t, onRelease, l.TryAcquire(zero, 1))

			how.resize(t, l, 3)
			requireState(t, l, 3, 1)
			require.Equal(t, never, l.TryAcquire(zero, 4), "n above the new limit")
			require.Equal(t, onRelease, l.TryAcquire(zero, 3), "only 2 more, not 3")
			require.Equal(t, granted, l.TryAcquire(zero, 1))
			require.Equal(t, granted, l.TryAcquire(zero, 1))
			require.Equal(t, onRelease, l.TryAcquire(zero, 1))
			requireState(t, l, 3, 3)
		})
	}
}

func TestGrowTurnsNeverIntoGrant(t *testing.T) {
	l := concurrency.New(2)
	require.Equal(t, never, l.TryAcquire(zero, 3))
	l.Resize(3)
	require.Equal(t, granted, l.TryAcquire(zero, 3))
	requireState(t, l, 3, 3)
}

func TestShrinkKeepsHoldersAndAdmitsNobodyUntilBelowTheLimit(t *testing.T) {
	for _, how := range []struct {
		name   string
		resize func(t *testing.T, l *concurrency.Limiter, limit int64)
	}{
		{"Resize", func(_ *testing.T, l *concurrency.Limiter, limit int64) { l.Resize(limit) }},
		{"Reconfigure", func(t *testing.T, l *concurrency.Limiter, limit int64) {
			require.NoError(t, l.Reconfigure(zero, spi.Params{concurrency.ParamLimit: limit}))
		}},
	} {
		t.Run(how.name, func(t *testing.T) {
			// limit 3 -> 1 with 3 holders: all 3 stay; nobody enters until held < 1.
			l := newHolding(t, 3, 3)
			how.resize(t, l, 1)
			requireState(t, l, 1, 3)

			for _, heldAfter := range []int64{2, 1} {
				l.Release(zero, 1)
				requireState(t, l, 1, heldAfter)
				require.Equal(t, onRelease, l.TryAcquire(zero, 1), "held %d >= limit 1", heldAfter)
				require.Equal(t, never, l.TryAcquire(zero, 2), "2 units can never fit limit 1")
				requireState(t, l, 1, heldAfter)
			}

			l.Release(zero, 1)
			requireState(t, l, 1, 0)
			require.Equal(t, granted, l.TryAcquire(zero, 1))
			requireState(t, l, 1, 1)
			require.Equal(t, onRelease, l.TryAcquire(zero, 1))
		})
	}
}

func TestShrinkToTheHeldCount(t *testing.T) {
	l := newHolding(t, 5, 2)
	l.Resize(2)
	requireState(t, l, 2, 2)
	require.Equal(t, onRelease, l.TryAcquire(zero, 1))
	l.Release(zero, 1)
	require.Equal(t, granted, l.TryAcquire(zero, 1))
}

func TestSnapshot(t *testing.T) {
	tests := []struct {
		name          string
		limit, held   int64
		shrinkTo      int64 // 0: no shrink
		wantLimit     int64
		wantAvailable int64
	}{
		{"empty", 4, 0, 0, 4, 4},
		{"partly held", 4, 1, 0, 4, 3},
		{"full", 4, 4, 0, 4, 0},
		{"shrunk below held", 4, 3, 1, 1, 0},
		{"shrunk to held", 4, 3, 3, 3, 0},
		{"shrunk above held", 4, 1, 3, 3, 2},
		{"max limit", concurrency.MaxLimit, 7, 0, concurrency.MaxLimit, concurrency.MaxLimit - 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := concurrency.New(tt.limit)
			if tt.held > 0 {
				require.Equal(t, granted, l.TryAcquire(zero, tt.held))
			}
			if tt.shrinkTo > 0 {
				l.Resize(tt.shrinkTo)
			}
			s := l.Snapshot(zero)
			assert.Equal(t, spi.Snapshot{
				Kind:      "concurrency",
				Limit:     tt.wantLimit,
				InUse:     tt.held,
				Available: tt.wantAvailable,
			}, s)
			assert.Equal(t, max(0, s.Limit-s.InUse), s.Available)

			// Available is exactly what TryAcquire can take now.
			if s.Available > 0 {
				require.Equal(t, granted, l.TryAcquire(zero, s.Available))
			}
			require.Equal(t, onRelease, l.TryAcquire(zero, 1), "and not one unit more")
		})
	}
}

func TestReconfigureInvalidChangesNothing(t *testing.T) {
	tests := []struct {
		name      string
		params    spi.Params
		wantParam string
		wantMsg   string
	}{
		{"nil params", nil, "limit", "limit: required"},
		{"empty params", spi.Params{}, "limit", "limit: required"},
		{"zero", spi.Params{"limit": 0}, "limit", "limit: must be between 1 and 2147483647, got 0"},
		{"negative", spi.Params{"limit": -5}, "limit", "limit: must be between 1 and 2147483647, got -5"},
		{"above max", spi.Params{"limit": concurrency.MaxLimit + 1}, "limit", "limit: must be between 1 and 2147483647, got 2147483648"},
		{"unknown alongside a valid limit", spi.Params{"limit": 10, "burst": 1}, "burst", `burst: unknown parameter for kind "concurrency" (want only "limit")`},
		{"unknown only", spi.Params{"burst": 1}, "burst", `burst: unknown parameter for kind "concurrency" (want only "limit")`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newHolding(t, 3, 2)
			before := l.Snapshot(zero)

			err := l.Reconfigure(zero, tt.params)
			require.EqualError(t, err, tt.wantMsg)
			var pe *spi.ParamError
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, tt.wantParam, pe.Param)

			assert.Equal(t, before, l.Snapshot(zero), "a rejected Reconfigure changes nothing")
			require.Equal(t, granted, l.TryAcquire(zero, 1))
			require.Equal(t, onRelease, l.TryAcquire(zero, 1))
		})
	}
}

func TestReconfigureDoesNotRetainParams(t *testing.T) {
	l := concurrency.New(3)
	p := spi.Params{concurrency.ParamLimit: 5}
	require.NoError(t, l.Reconfigure(zero, p))
	p[concurrency.ParamLimit] = 1
	requireState(t, l, 5, 0)
}

func TestNewAndResizeRejectInvalidLimits(t *testing.T) {
	tests := []struct {
		limit int64
		want  string
	}{
		{0, "concurrency: limit: must be between 1 and 2147483647, got 0"},
		{-1, "concurrency: limit: must be between 1 and 2147483647, got -1"},
		{concurrency.MaxLimit + 1, "concurrency: limit: must be between 1 and 2147483647, got 2147483648"},
		{math.MaxInt64, "concurrency: limit: must be between 1 and 2147483647, got 9223372036854775807"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.limit), func(t *testing.T) {
			assert.Equal(t, tt.want, panicMessage(t, func() { concurrency.New(tt.limit) }))

			l := newHolding(t, 4, 2)
			assert.Equal(t, tt.want, panicMessage(t, func() { l.Resize(tt.limit) }))
			requireState(t, l, 4, 2)
		})
	}
}

func TestNewAcceptsTheWholeRange(t *testing.T) {
	for _, limit := range []int64{1, 2, 1 << 16, concurrency.MaxLimit} {
		l := concurrency.New(limit)
		requireState(t, l, limit, 0)
		l.Resize(limit)
		requireState(t, l, limit, 0)
	}
}

func TestLimiterImplementsSPI(t *testing.T) {
	var l spi.Limiter = concurrency.New(2)
	require.Equal(t, granted, l.TryAcquire(zero, 2))
	require.Equal(t, onRelease, l.TryAcquire(zero, 1))
	l.Cancel(zero, 1)
	l.Release(zero, 1)
	require.NoError(t, l.Reconfigure(zero, spi.Params{"limit": 1}))
	assert.Equal(t, spi.Snapshot{Kind: "concurrency", Limit: 1, InUse: 0, Available: 1}, l.Snapshot(zero))
}
