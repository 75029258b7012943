package conformance

import (
	"fmt"
	"runtime/debug"
	"testing"
	"time"

	"github.com/sluicerpc/sluice/spi"
)

// tb is the part of testing.TB the checks use. It is also rapid.TB, so that
// property checks run on it, and the suite's own tests implement it with a
// recorder to prove that each broken limiter fails the check that should
// catch it.
type tb interface {
	Helper()
	Name() string
	Logf(format string, args ...any)
	Log(args ...any)
	Skipf(format string, args ...any)
	Skip(args ...any)
	SkipNow()
	Errorf(format string, args ...any)
	Error(args ...any)
	Fatalf(format string, args ...any)
	Fatal(args ...any)
	FailNow()
	Fail()
	Failed() bool
}

// check is one check of a suite, run against a harness of type H.
type check[H any] struct {
	name string
	run  func(t tb, h H)
}

// limiterCheck is one check of the limiter suite.
type limiterCheck = check[LimiterHarness]

// limiterChecks lists the checks in the order they run.
var limiterChecks = []limiterCheck{
	{"NeverAboveLimitConcurrently", checkNeverAboveLimitConcurrently},
	{"GrantsRespectLimitInForce", checkGrantsRespectLimitInForce},
	{"NoFreeBurst", checkNoFreeBurst},
	{"LimitsAtEveryScale", checkLimitsAtEveryScale},
	{"ConcurrencyIgnoresTime", checkConcurrencyIgnoresTime},
	{"LateCallersStrict", checkLateCallersStrict},
	{"NoDrift", checkNoDrift},
	{"LateCancelNeverLoosens", checkLateCancelNeverLoosens},
	{"RaiseNeverRefills", checkRaiseNeverRefills},
	{"ShrinkNeverRevokes", checkShrinkNeverRevokes},
	{"ExactlyOnceRelease", checkExactlyOnceRelease},
	{"CountersBackToZero", checkCountersBackToZero},
	{"SnapshotConsistent", checkSnapshotConsistent},
	{"SnapshotExactUnderConcurrency", checkSnapshotExactUnderConcurrency},
	{"RetryHints", checkRetryHints},
}

// RunLimiterTests runs the limiter conformance checks against the kind that
// newHarness describes, one subtest per check, each with a fresh harness.
func RunLimiterTests(t *testing.T, newHarness NewLimiterHarness) {
	t.Helper()
	runTests(t, limiterChecks, newHarness, validateHarness)
}

// closer is what every harness has.
type closer interface{ Close() }

// runTests runs checks as subtests of t, each on a fresh harness.
func runTests[H closer](t *testing.T, checks []check[H], newHarness func(*testing.T) (H, error), validate func(H) error) {
	t.Helper()
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			runCheck(t, c, func() (H, error) { return newHarness(t) }, validate)
		})
	}
}

// runCheck runs one check on a fresh harness from newHarness, closed when
// the check ends, after validate accepted it; a panic of the check or of
// the implementation under test fails the check.
func runCheck[H closer](t tb, c check[H], newHarness func() (H, error), validate func(H) error) {
	h, err := newHarness()
	if err != nil {
		t.Fatalf("creating the harness: %v", err)
	}
	defer h.Close()
	defer failOnPanic(t)
	if err := validate(h); err != nil {
		t.Fatalf("invalid harness: %v", err)
	}
	c.run(t, h)
}

// validateHarness rejects a harness that the checks cannot use.
func validateHarness(h LimiterHarness) error {
	caps := h.Capabilities()
	k := h.Kind()
	if k == nil {
		return fmt.Errorf("Kind() is nil")
	}
	if caps.Class != k.Class() {
		return fmt.Errorf("Capabilities().Class is %v, Kind().Class() is %v", caps.Class, k.Class())
	}
	if err := caps.Validate(); err != nil {
		return fmt.Errorf("Capabilities(): %v", err)
	}
	return nil
}

// start is the instant at which every check builds its limiters.
var start = time.Date(2030, time.January, 1, 0, 0, 0, 0, time.UTC)

// instant describes t for a failure message: its offset from start (the
// instant every check begins at), or "the zero time", which the concurrency
// checks pass.
func instant(t time.Time) string {
	if t.IsZero() {
		return "the zero time"
	}
	if d := t.Sub(start); d > -24*time.Hour && d < 24*time.Hour {
		return "start+" + d.String()
	}
	return t.Format(time.RFC3339Nano)
}

// newLimiter builds a limiter of the harness's kind with p at now, failing
// the check if the kind rejects p.
func newLimiter(t tb, h LimiterHarness, p spi.Params, now time.Time) spi.Limiter {
	t.Helper()
	if err := h.Kind().Validate(p); err != nil {
		t.Fatalf("Validate(%v): %v", p, err)
	}
	l, err := h.Kind().New(p, now)
	if err != nil {
		t.Fatalf("New(%v): %v", p, err)
	}
	return l
}

// reconfigure changes l to p at now, failing the check on an error.
func reconfigure(t tb, l spi.Limiter, p spi.Params, now time.Time) {
	t.Helper()
	if err := l.Reconfigure(now, p); err != nil {
		t.Fatalf("Reconfigure(%v, %v): %v", instant(now), p, err)
	}
}

// drain takes single units at now until a TryAcquire is refused and returns
// how many were granted, stopping (and failing) after max grants.
func drain(t tb, l spi.Limiter, now time.Time, max int64) int64 {
	t.Helper()
	var n int64
	for l.TryAcquire(now, 1).Granted {
		n++
		if n > max {
			t.Fatalf("at %v the limiter granted more than %d units", instant(now), max)
		}
	}
	return n
}

// failOnPanic, deferred, turns a panic of the check (or of the limiter
// under test) into a failure of that check alone. It does not stop
// runtime.Goexit, so FailNow and SkipNow still work.
func failOnPanic(t tb) {
	if r := recover(); r != nil {
		t.Fatalf("panic: %v\n%s", r, debug.Stack())
	}
}

// releaseSafely calls release and reports whether it panicked.
func releaseSafely(f func()) (panicked bool) {
	defer func() {
		if recover() != nil {
			panicked = true
		}
	}()
	f()
	return false
}

// requireClass skips the check unless the kind is of class c.
func requireClass(t tb, h LimiterHarness, c spi.Class) {
	t.Helper()
	if h.Capabilities().Class != c {
		t.Skipf("only for %v kinds", c)
	}
}
