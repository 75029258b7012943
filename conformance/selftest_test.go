package conformance

import (
	"flag"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) {
	flag.Parse()
	// The self-tests make property checks fail on purpose; they must not
	// leave rapid fail files behind.
	if err := flag.Set("rapid.nofailfile", "true"); err != nil {
		panic(err)
	}
	os.Exit(m.Run())
}

// runRecorded runs every check against h with CheckLimiter and returns
// the names of the checks that failed, with what each logged.
func runRecorded(h LimiterHarness) (failed []string, logs map[string][]string) {
	return failures(CheckLimiter("selftest", func() (LimiterHarness, error) { return h, nil }))
}

// racingChecks are the checks that race goroutines for up to seconds on a
// correct limiter (see race.go).
var racingChecks = []string{"NeverAboveLimitConcurrently", "GrantsRespectLimitInForce", "SnapshotExactUnderConcurrency"}

// runRecordedFor runs against h, as CheckLimiter does, every check but the
// racing ones, and the racing one want if it is one.
func runRecordedFor(h LimiterHarness, want string) (failed []string, logs map[string][]string) {
	var checks []limiterCheck
	for _, c := range limiterChecks {
		if c.name == want || !slices.Contains(racingChecks, c.name) {
			checks = append(checks, c)
		}
	}
	return failures(checkAll("selftest", checks, func() (LimiterHarness, error) { return h, nil }, validateHarness))
}

func failures(r Report) (failed []string, logs map[string][]string) {
	logs = map[string][]string{}
	for _, c := range r.Checks {
		if c.Outcome == Failed {
			failed = append(failed, c.Name)
			logs[c.Name] = c.Log
		}
	}
	return failed, logs
}

var _ tb = (*testing.T)(nil)

// TestCorrectFakesPass runs the suite, as a third party would, on the
// correct fakes that the broken ones are derived from: every failure in
// TestBrokenLimitersFail is then due to the fault alone.
func TestCorrectFakesPass(t *testing.T) {
	t.Run("semaphore", func(t *testing.T) {
		RunLimiterTests(t, func(*testing.T) (LimiterHarness, error) { return semHarness(semFaults{}), nil })
	})
	t.Run("bucket", func(t *testing.T) {
		RunLimiterTests(t, func(*testing.T) (LimiterHarness, error) { return bucketHarness(bucketFaults{}), nil })
	})
	t.Run("window", func(t *testing.T) {
		RunLimiterTests(t, func(*testing.T) (LimiterHarness, error) { return windowHarness(windowFaults{}), nil })
	})
}

// TestRecorderPassesCorrectFakes checks the recorder itself: on the correct
// fakes it records no failure.
func TestRecorderPassesCorrectFakes(t *testing.T) {
	for _, h := range []LimiterHarness{semHarness(semFaults{}), bucketHarness(bucketFaults{}), windowHarness(windowFaults{})} {
		failed, logs := runRecorded(h)
		assert.Empty(t, failed, "%s: %v", h.Kind().Name(), logs)
	}
}

// brokenLimiters are the deliberately broken limiters of the self-test,
// each with the check that must catch it. The racy ones (a race decides
// whether the fault shows) run racyRuns times, and the suite must fail
// every run: it must not need -race or scheduling luck to catch them.
var brokenLimiters = []struct {
	name    string
	harness LimiterHarness
	want    string // the check that must fail
	racy    bool
}{
	{"check-then-increment overshoot", semHarness(semFaults{overshoot: true}), "NeverAboveLimitConcurrently", true},
	{"limit and held in separate atomics, limit read once", semHarness(semFaults{staleLimit: true}), "GrantsRespectLimitInForce", true},
	{"double release credited twice", semHarness(semFaults{doubleCredit: true}), "ExactlyOnceRelease", false},
	{"held units revoked on shrink", semHarness(semFaults{revoke: true}), "ShrinkNeverRevokes", false},
	{"snapshot that lies", semHarness(semFaults{lyingSnap: true}), "SnapshotConsistent", false},
	{"snapshot stale after reconfigure (concurrency)", semHarness(semFaults{staleSnap: true}), "SnapshotConsistent", false},
	{"snapshot stale after reconfigure (concurrency, property)", semHarness(semFaults{staleSnap: true}), "NoFreeBurst", false},
	{"HintNever from the limit given to New", semHarness(semFaults{staleHint: true}), "NoFreeBurst", false},
	{"snapshot from acquired and released counters, a Gosched between the loads", semHarness(semFaults{snapCountersGosched: true}), "SnapshotExactUnderConcurrency", true},
	{"snapshot cached, refreshed every fourth call", semHarness(semFaults{snapCached: true}), "SnapshotExactUnderConcurrency", false},
	{"snapshot cached, refreshed every fourth call (sequential)", semHarness(semFaults{snapCached: true}), "SnapshotConsistent", false},
	{"free burst after reconfigure", bucketHarness(bucketFaults{freeBurst: true}), "NoFreeBurst", false},
	{"lowered capacity not clamped", bucketHarness(bucketFaults{noClampOnLower: true}), "NoFreeBurst", false},
	{"refill on capacity raise", bucketHarness(bucketFaults{refillOnRaise: true}), "RaiseNeverRefills", false},
	{"refill on capacity raise (property)", bucketHarness(bucketFaults{refillOnRaise: true}), "NoFreeBurst", false},
	{"snapshot stale after reconfigure (rate)", bucketHarness(bucketFaults{staleSnap: true}), "SnapshotConsistent", false},
	{"snapshot stale after reconfigure (rate, property)", bucketHarness(bucketFaults{staleSnap: true}), "NoFreeBurst", false},
	{"retry hint 1ns early", bucketHarness(bucketFaults{earlyHint: true}), "RetryHints", false},
	{"retry hint one period late", bucketHarness(bucketFaults{lateHint: true}), "RetryHints", false},
	{"retry hint from the period given to New", bucketHarness(bucketFaults{staleHintPeriod: true}), "NoFreeBurst", false},
	{"cadence change credits past boundaries", bucketHarness(bucketFaults{keepPhaseOnCadence: true}), "NoFreeBurst", false},
	{"late caller rewinds the credited boundaries", bucketHarness(bucketFaults{lateRewinds: true}), "NoFreeBurst", false},
	{"cancel credits one token more", bucketHarness(bucketFaults{cancelOvercredit: true}), "NoFreeBurst", false},
	{"a refusal consumes a token", bucketHarness(bucketFaults{refusalConsumes: true}), "NoFreeBurst", false},
	{"check-then-decrement overdraw", bucketHarness(bucketFaults{overshoot: true}), "NeverAboveLimitConcurrently", true},
	{"double cancel credited twice", bucketHarness(bucketFaults{doubleCancel: true}), "ExactlyOnceRelease", false},
	{"late cancel refunded after the bucket was full", bucketHarness(bucketFaults{naiveRefund: true}), "LateCancelNeverLoosens", false},
	{"cancel off the current window, whatever its instant", windowHarness(windowFaults{cancelAnyWindow: true}), "LateCancelNeverLoosens", false},
	{"cancel of a grant before a cadence change lands in the new window", windowHarness(windowFaults{cancelAcrossCadence: true}), "LateCancelNeverLoosens", false},
}

// racyRuns is how many times the self-test runs a racy broken limiter.
const racyRuns = 20

// narrowRaces are broken limiters whose race window is one or two
// instructions with nothing between the check and the act (what a careful
// third party gets wrong): the duels expose them only when the victim is
// suspended inside that window, which is likely but not certain within
// their budget on a busy machine. TestNarrowRacesCaught asserts that the
// suite catches each within racyRuns runs, and logs how many it took.
var narrowRaces = []struct {
	name    string
	harness LimiterHarness
	want    string
}{
	{"check-then-increment overshoot, nothing between", semHarness(semFaults{tightOvershoot: true}), "NeverAboveLimitConcurrently"},
	{"limit and held in separate atomics, limit read per attempt", semHarness(semFaults{staleLimitPerAttempt: true}), "GrantsRespectLimitInForce"},
	{"release as a load and a store", semHarness(semFaults{lostRelease: true}), "NeverAboveLimitConcurrently"},
	{"check-then-decrement overdraw, nothing between", bucketHarness(bucketFaults{tightOvershoot: true}), "NeverAboveLimitConcurrently"},
	{"snapshot from acquired and released counters, nothing between the loads", semHarness(semFaults{snapCounters: true}), "SnapshotExactUnderConcurrency"},
	{"snapshot with Available from a second load of the held count", semHarness(semFaults{snapTornAvailable: true}), "SnapshotExactUnderConcurrency"},
}

// TestNarrowRacesCaught runs the check that must catch each narrow race
// until it does, at most racyRuns times.
func TestNarrowRacesCaught(t *testing.T) {
	for _, tt := range narrowRaces {
		t.Run(tt.name, func(t *testing.T) {
			for run := 1; run <= racyRuns; run++ {
				if r := runOneRecorded(tt.harness, tt.want); r.Outcome == Failed {
					t.Logf("%s caught it in run %d: %s", tt.want, run, strings.Join(r.Log, "\n  "))
					return
				}
			}
			t.Errorf("%s did not catch it in %d runs", tt.want, racyRuns)
		})
	}
}

// TestBrokenLimitersFail proves that the suite catches each deliberately
// broken limiter, and names the check that should catch it. Every check
// runs once on each, except that the racing checks, which race for up to
// seconds on a correct path, run only on the broken limiters they must
// catch; a racy one then runs the check that must catch it racyRuns-1 more
// times, and each run must fail.
func TestBrokenLimitersFail(t *testing.T) {
	for _, tt := range brokenLimiters {
		t.Run(tt.name, func(t *testing.T) {
			failed, logs := runRecordedFor(tt.harness, tt.want)
			require.NotEmpty(t, failed, "the suite passed a broken limiter")
			assert.Contains(t, failed, tt.want, "failed checks: %v", failed)
			for _, name := range failed {
				t.Logf("%s failed:\n  %s", name, strings.Join(logs[name][:min(len(logs[name]), 3)], "\n  "))
			}
			if !tt.racy {
				return
			}
			caught := 1
			if !slices.Contains(failed, tt.want) {
				caught = 0
			}
			for range racyRuns - 1 {
				if r := runOneRecorded(tt.harness, tt.want); r.Outcome == Failed {
					caught++
				} else {
					t.Logf("%s passed once: %s", tt.want, strings.Join(r.Log, "\n  "))
				}
			}
			assert.Equal(t, racyRuns, caught, "%s caught the race in %d of %d runs", tt.want, caught, racyRuns)
		})
	}
}

// runOneRecorded runs the check named name against h, as CheckLimiter
// does.
func runOneRecorded(h LimiterHarness, name string) CheckResult {
	i := slices.IndexFunc(limiterChecks, func(c limiterCheck) bool { return c.name == name })
	r := checkAll("selftest", limiterChecks[i:i+1], func() (LimiterHarness, error) { return h, nil }, validateHarness)
	return r.Checks[0]
}
