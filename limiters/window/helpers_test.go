package window_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/spi"
)

// t0 is the origin of every test clock; at(d) is the instant d after it.
var t0 = time.Date(2030, time.January, 1, 0, 0, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

var (
	granted = spi.Grant()
	never   = spi.RefuseNever()
)

// until is a refusal whose retry can succeed at at(d).
func until(d time.Duration) spi.Decision { return spi.RefuseUntil(at(d)) }

// show renders a decision with its retry time relative to t0.
func show(d spi.Decision) string {
	switch {
	case d.Granted:
		return "granted"
	case d.Hint == spi.HintAt:
		return fmt.Sprintf("refused until t0+%v", d.RetryAt.Sub(t0))
	}
	return "refused (" + d.Hint.String() + ")"
}

// requireDecision compares two decisions, times by instant.
func requireDecision(t testing.TB, want, got spi.Decision, msgAndArgs ...any) {
	t.Helper()
	if got.Granted != want.Granted || got.Hint != want.Hint || !got.RetryAt.Equal(want.RetryAt) {
		require.Fail(t, fmt.Sprintf("decision: got %s, want %s", show(got), show(want)), msgAndArgs...)
	}
}

// step is one TryAcquire of a scripted scenario.
type step struct {
	at   time.Duration
	n    int64
	want spi.Decision
}

func runSteps(t *testing.T, l spi.Limiter, steps []step) {
	t.Helper()
	for i, s := range steps {
		requireDecision(t, s.want, l.TryAcquire(at(s.at), s.n), "step %d: TryAcquire(t0+%v, %d)", i, s.at, s.n)
	}
}

// requireExactHint checks that n units are refused at now until exactly
// want: still refused (with the same hint) 1ns before, granted at want. The
// grant at want is kept.
func requireExactHint(t *testing.T, l spi.Limiter, now time.Duration, n int64, want time.Duration) {
	t.Helper()
	requireDecision(t, until(want), l.TryAcquire(at(now), n), "TryAcquire(t0+%v, %d)", now, n)
	if want-time.Nanosecond > now {
		requireDecision(t, until(want), l.TryAcquire(at(want-time.Nanosecond), n), "1ns before the hint")
	}
	requireDecision(t, granted, l.TryAcquire(at(want), n), "at the hint")
}

// requireSnapshot checks a limiter's snapshot at now.
func requireSnapshot(t testing.TB, l spi.Limiter, now time.Duration, kind string, limit, inUse, available int64) {
	t.Helper()
	require.Equal(t, spi.Snapshot{Kind: kind, Limit: limit, InUse: inUse, Available: available}, l.Snapshot(at(now)), "Snapshot(t0+%v)", now)
}

// take acquires n units one at a time and requires every one granted.
func take(t testing.TB, l spi.Limiter, now time.Duration, n int64) {
	t.Helper()
	for i := range n {
		requireDecision(t, granted, l.TryAcquire(at(now), 1), "unit %d of %d at t0+%v", i+1, n, now)
	}
}

// usage is a spi.Usage relative to t0.
func usage(units int64, d time.Duration) spi.Usage { return spi.Usage{Units: units, Until: at(d)} }

// requireUsage compares Seal results, times by instant.
func requireUsage(t testing.TB, want, got []spi.Usage, msgAndArgs ...any) {
	t.Helper()
	render := func(u []spi.Usage) []string {
		out := make([]string, len(u))
		for i, e := range u {
			out[i] = fmt.Sprintf("%d until t0+%v", e.Units, e.Until.Sub(t0))
		}
		return out
	}
	require.Equal(t, render(want), render(got), msgAndArgs...)
	require.True(t, slices.IsSortedFunc(got, func(a, b spi.Usage) int { return a.Until.Compare(b.Until) }), "Seal orders usage by Until")
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
