package conformance

import (
	"flag"
	"os"
	"slices"
	"strings"
	"sync"
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
	t.Run("planted semaphore", func(t *testing.T) {
		RunLimiterTests(t, func(*testing.T) (LimiterHarness, error) { return plantedSemHarness(0), nil })
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
	class   string // the class of bug it stands for (TestPlantedBugsByClass)
	harness LimiterHarness
	want    string // the check that must fail
	racy    bool
}{
	{"check-then-increment overshoot", "grants racing", semHarness(semFaults{overshoot: true}), "NeverAboveLimitConcurrently", true},
	{"limit and held in separate atomics, limit read once", "grants racing", semHarness(semFaults{staleLimit: true}), "GrantsRespectLimitInForce", true},
	{"double release credited twice", "exactly-once give-back", semHarness(semFaults{doubleCredit: true}), "ExactlyOnceRelease", false},
	{"held units revoked on shrink", "reconfiguration", semHarness(semFaults{revoke: true}), "ShrinkNeverRevokes", false},
	{"snapshot that lies", "snapshot honesty", semHarness(semFaults{lyingSnap: true}), "SnapshotConsistent", false},
	{"snapshot stale after reconfigure (concurrency)", "snapshot honesty", semHarness(semFaults{staleSnap: true}), "SnapshotConsistent", false},
	{"snapshot stale after reconfigure (concurrency, property)", "snapshot honesty", semHarness(semFaults{staleSnap: true}), "NoFreeBurst", false},
	{"HintNever from the limit given to New", "hints", semHarness(semFaults{staleHint: true}), "NoFreeBurst", false},
	{"snapshot from acquired and released counters, a Gosched between the loads", "snapshot honesty", semHarness(semFaults{snapCountersGosched: true}), "SnapshotExactUnderConcurrency", true},
	{"snapshot cached, refreshed every fourth call", "snapshot honesty", semHarness(semFaults{snapCached: true}), "SnapshotExactUnderConcurrency", false},
	{"snapshot cached, refreshed every fourth call (sequential)", "snapshot honesty", semHarness(semFaults{snapCached: true}), "SnapshotConsistent", false},
	{"free burst after reconfigure", "reconfiguration", bucketHarness(bucketFaults{freeBurst: true}), "NoFreeBurst", false},
	{"lowered capacity not clamped", "reconfiguration", bucketHarness(bucketFaults{noClampOnLower: true}), "NoFreeBurst", false},
	{"refill on capacity raise", "reconfiguration", bucketHarness(bucketFaults{refillOnRaise: true}), "RaiseNeverRefills", false},
	{"refill on capacity raise (property)", "reconfiguration", bucketHarness(bucketFaults{refillOnRaise: true}), "NoFreeBurst", false},
	{"snapshot stale after reconfigure (rate)", "snapshot honesty", bucketHarness(bucketFaults{staleSnap: true}), "SnapshotConsistent", false},
	{"snapshot stale after reconfigure (rate, property)", "snapshot honesty", bucketHarness(bucketFaults{staleSnap: true}), "NoFreeBurst", false},
	{"retry hint 1ns early", "hints", bucketHarness(bucketFaults{earlyHint: true}), "RetryHints", false},
	{"retry hint one period late", "hints", bucketHarness(bucketFaults{lateHint: true}), "RetryHints", false},
	{"retry hint from the period given to New", "hints", bucketHarness(bucketFaults{staleHintPeriod: true}), "NoFreeBurst", false},
	{"cadence change credits past boundaries", "reconfiguration", bucketHarness(bucketFaults{keepPhaseOnCadence: true}), "NoFreeBurst", false},
	{"late caller rewinds the credited boundaries", "late callers", bucketHarness(bucketFaults{lateRewinds: true}), "NoFreeBurst", false},
	{"cancel credits one token more", "exactly-once give-back", bucketHarness(bucketFaults{cancelOvercredit: true}), "NoFreeBurst", false},
	{"a refusal consumes a token", "exactly-once give-back", bucketHarness(bucketFaults{refusalConsumes: true}), "NoFreeBurst", false},
	{"check-then-decrement overdraw", "grants racing", bucketHarness(bucketFaults{overshoot: true}), "NeverAboveLimitConcurrently", true},
	{"double cancel credited twice", "exactly-once give-back", bucketHarness(bucketFaults{doubleCancel: true}), "ExactlyOnceRelease", false},
	{"late cancel refunded after the bucket was full", "late cancel", bucketHarness(bucketFaults{naiveRefund: true}), "LateCancelNeverLoosens", false},
	{"cancel off the current window, whatever its instant", "late cancel", windowHarness(windowFaults{cancelAnyWindow: true}), "LateCancelNeverLoosens", false},
	{"cancel of a grant before a cadence change lands in the new window", "late cancel", windowHarness(windowFaults{cancelAcrossCadence: true}), "LateCancelNeverLoosens", false},

	// Concurrency kinds must ignore the time they are given.
	{"leases that expire a minute after the latest grant", "time given to a concurrency kind", plantedSemHarness(leasesExpire), "ConcurrencyIgnoresTime", false},
	{"a refusal whenever the clock went backwards", "time given to a concurrency kind", plantedSemHarness(refuseBackwardClock), "ConcurrencyIgnoresTime", false},
	// Many units at once.
	{"a bulk Release that returns one unit too few", "many units at once", plantedSemHarness(bulkReleaseShort), "LimitsAtEveryScale", false},
	{"a bulk TryAcquire granted with one token fewer", "many units at once", bucketHarness(bucketFaults{bulkOffByOne: true}), "LimitsAtEveryScale", false},
	// Limits at every scale up to the int64 edge.
	{"a limit kept in an int32", "limits at every scale", plantedSemHarness(int32Limit), "LimitsAtEveryScale", false},
	{"held+n compared with the limit, wrapping near the int64 edge", "limits at every scale", plantedSemHarness(overflowingCheck), "LimitsAtEveryScale", false},
	{"tokens compared in float64", "limits at every scale", bucketHarness(bucketFaults{floatCompare: true}), "LimitsAtEveryScale", false},
	// Callers later than a whole window or period, times going backwards.
	{"a caller more than a period late rewinds the credited boundaries", "late callers", bucketHarness(bucketFaults{farLateRewinds: true}), "LateCallersStrict", false},
	{"a caller more than a window late counted in an empty window of its own", "late callers", windowHarness(windowFaults{lateOwnWindow: true}), "LateCallersStrict", false},
	// A rate Snapshot whose InUse says at rest when it is not.
	{"a rate Snapshot whose InUse is always 0", "rate InUse at rest", bucketHarness(bucketFaults{inUseZero: true}), "LimitsAtEveryScale", false},
	{"a rate Snapshot whose InUse is the previous window's count", "rate InUse at rest", windowHarness(windowFaults{inUseStale: true}), "LimitsAtEveryScale", false},
	// Rounding that accumulates over tens of thousands of windows.
	{"a period kept in 1024ths of a second", "accumulated rounding", bucketHarness(bucketFaults{binaryPeriod: true}), "NoDrift", false},
	{"a window length shaved by 0.02%", "accumulated rounding", windowHarness(windowFaults{shavedWindow: true}), "NoDrift", false},
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
	class   string
	harness LimiterHarness
	want    string
}{
	{"check-then-increment overshoot, nothing between", "grants racing", semHarness(semFaults{tightOvershoot: true}), "NeverAboveLimitConcurrently"},
	{"limit and held in separate atomics, limit read per attempt", "grants racing", semHarness(semFaults{staleLimitPerAttempt: true}), "GrantsRespectLimitInForce"},
	{"release as a load and a store", "grants racing", semHarness(semFaults{lostRelease: true}), "NeverAboveLimitConcurrently"},
	{"check-then-decrement overdraw, nothing between", "grants racing", bucketHarness(bucketFaults{tightOvershoot: true}), "NeverAboveLimitConcurrently"},
	{"snapshot from acquired and released counters, nothing between the loads", "snapshot honesty", semHarness(semFaults{snapCounters: true}), "SnapshotExactUnderConcurrency"},
	{"snapshot with Available from a second load of the held count", "snapshot honesty", semHarness(semFaults{snapTornAvailable: true}), "SnapshotExactUnderConcurrency"},
}

// TestNarrowRacesCaught runs the check that must catch each narrow race
// until it does, at most racyRuns times.
func TestNarrowRacesCaught(t *testing.T) {
	for _, tt := range narrowRaces {
		t.Run(tt.name, func(t *testing.T) {
			for run := 1; run <= racyRuns; run++ {
				if r := runOneRecorded(tt.harness, tt.want); r.Outcome == Failed {
					t.Logf("%s caught it in run %d: %s", tt.want, run, strings.Join(r.Log, "\n  "))
					planted.record(tt.name, tt.class, true)
					return
				}
			}
			planted.record(tt.name, tt.class, false)
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
			caught := slices.Contains(failed, tt.want)
			defer func() { planted.record(tt.name, tt.class, caught) }()
			require.NotEmpty(t, failed, "the suite passed a broken limiter")
			assert.Contains(t, failed, tt.want, "failed checks: %v", failed)
			for _, name := range failed {
				t.Logf("%s failed:\n  %s", name, strings.Join(logs[name][:min(len(logs[name]), 3)], "\n  "))
			}
			if !tt.racy {
				return
			}
			runs := 1
			if !caught {
				runs = 0
			}
			for range racyRuns - 1 {
				if r := runOneRecorded(tt.harness, tt.want); r.Outcome == Failed {
					runs++
				} else {
					t.Logf("%s passed once: %s", tt.want, strings.Join(r.Log, "\n  "))
				}
			}
			caught = runs == racyRuns
			assert.Equal(t, racyRuns, runs, "%s caught the race in %d of %d runs", tt.want, runs, racyRuns)
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

// plantedOutcomes records, per broken limiter, whether the check meant to
// catch it did (every run for a racy one, within racyRuns for a narrow
// one), for TestPlantedBugsByClass.
type plantedOutcomes struct {
	mu     sync.Mutex
	class  map[string]string // name -> class
	caught map[string]bool
}

var planted = plantedOutcomes{class: map[string]string{}, caught: map[string]bool{}}

func (p *plantedOutcomes) record(name, class string, caught bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.class[name], p.caught[name] = class, caught
}

// TestPlantedBugsByClass prints the self-test's table, one line per class
// of bug: how many broken limiters were planted for it and how many the
// suite caught, and requires at least two planted per class, all caught.
// Run alone (make conformance runs it so), it first runs
// TestBrokenLimitersFail and TestNarrowRacesCaught.
func TestPlantedBugsByClass(t *testing.T) {
	planted.mu.Lock()
	empty := len(planted.caught) == 0
	planted.mu.Unlock()
	if empty {
		t.Run("broken", TestBrokenLimitersFail)
		t.Run("narrow", TestNarrowRacesCaught)
	}
	planted.mu.Lock()
	defer planted.mu.Unlock()
	type tally struct{ planted, caught int }
	byClass := map[string]*tally{}
	var classes []string
	for name, class := range planted.class {
		if byClass[class] == nil {
			byClass[class] = &tally{}
			classes = append(classes, class)
		}
		byClass[class].planted++
		if planted.caught[name] {
			byClass[class].caught++
		}
	}
	slices.Sort(classes)
	t.Logf("selftest-table %-34s %7s %6s", "class", "planted", "caught")
	for _, c := range classes {
		tl := byClass[c]
		t.Logf("selftest-table %-34s %7d %6d", c, tl.planted, tl.caught)
		assert.GreaterOrEqual(t, tl.planted, 2, "class %q has fewer than two planted bugs", c)
		assert.Equal(t, tl.planted, tl.caught, "class %q: the suite caught %d of %d", c, tl.caught, tl.planted)
	}
}
