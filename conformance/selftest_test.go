package conformance

import (
	"flag"
	"fmt"
	"os"
	"runtime"
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

// recorder is a tb that records failures instead of failing the test. A
// check runs on it in its own goroutine, so that FailNow and SkipNow can end
// the check with runtime.Goexit, as testing.T does.
type recorder struct {
	name string

	mu      sync.Mutex
	failed  bool
	skipped bool
	logs    []string
}

func (r *recorder) Helper()      {}
func (r *recorder) Name() string { return r.name }

func (r *recorder) Logf(format string, args ...any) { r.log(fmt.Sprintf(format, args...)) }
func (r *recorder) Log(args ...any)                 { r.log(fmt.Sprint(args...)) }

func (r *recorder) log(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.logs = append(r.logs, s)
}

func (r *recorder) Fail() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failed = true
}

func (r *recorder) Failed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failed
}

func (r *recorder) FailNow()                          { r.Fail(); runtime.Goexit() }
func (r *recorder) Errorf(format string, args ...any) { r.Logf(format, args...); r.Fail() }
func (r *recorder) Error(args ...any)                 { r.Log(args...); r.Fail() }
func (r *recorder) Fatalf(format string, args ...any) { r.Logf(format, args...); r.FailNow() }
func (r *recorder) Fatal(args ...any)                 { r.Log(args...); r.FailNow() }
func (r *recorder) Skipf(format string, args ...any)  { r.Logf(format, args...); r.SkipNow() }
func (r *recorder) Skip(args ...any)                  { r.Log(args...); r.SkipNow() }

func (r *recorder) SkipNow() {
	r.mu.Lock()
	r.skipped = true
	r.mu.Unlock()
	runtime.Goexit()
}

// runRecorded runs every check against h on a recorder and returns the
// names of the checks that failed, with what each logged.
func runRecorded(h LimiterHarness) (failed []string, logs map[string][]string) {
	logs = map[string][]string{}
	for _, c := range limiterChecks {
		r := &recorder{name: "selftest/" + c.name}
		done := make(chan struct{})
		go func() {
			defer close(done)
			defer failOnPanic(r)
			c.run(r, h)
		}()
		<-done
		if r.Failed() {
			failed = append(failed, c.name)
			logs[c.name] = r.logs
		}
	}
	return failed, logs
}

var _ tb = (*recorder)(nil)
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
}

// TestRecorderPassesCorrectFakes checks the recorder itself: on the correct
// fakes it records no failure.
func TestRecorderPassesCorrectFakes(t *testing.T) {
	for _, h := range []LimiterHarness{semHarness(semFaults{}), bucketHarness(bucketFaults{})} {
		failed, logs := runRecorded(h)
		assert.Empty(t, failed, "%s: %v", h.Kind().Name(), logs)
	}
}

// TestBrokenLimitersFail proves that the suite catches each deliberately
// broken limiter, and names the check that should catch it.
func TestBrokenLimitersFail(t *testing.T) {
	tests := []struct {
		name    string
		harness LimiterHarness
		want    string // the check that must fail
	}{
		{"check-then-increment overshoot", semHarness(semFaults{overshoot: true}), "NeverAboveLimitConcurrently"},
		{"double release credited twice", semHarness(semFaults{doubleCredit: true}), "ExactlyOnceRelease"},
		{"held units revoked on shrink", semHarness(semFaults{revoke: true}), "ShrinkNeverRevokes"},
		{"snapshot that lies", semHarness(semFaults{lyingSnap: true}), "SnapshotConsistent"},
		{"free burst after reconfigure", bucketHarness(bucketFaults{freeBurst: true}), "NoFreeBurst"},
		{"refill on capacity raise", bucketHarness(bucketFaults{refillOnRaise: true}), "RaiseNeverRefills"},
		{"refill on capacity raise (property)", bucketHarness(bucketFaults{refillOnRaise: true}), "NoFreeBurst"},
		{"retry hint 1ns early", bucketHarness(bucketFaults{earlyHint: true}), "RetryHints"},
		{"retry hint one period late", bucketHarness(bucketFaults{lateHint: true}), "RetryHints"},
		{"check-then-decrement overdraw", bucketHarness(bucketFaults{overshoot: true}), "NeverAboveLimitConcurrently"},
		{"double cancel credited twice", bucketHarness(bucketFaults{doubleCancel: true}), "ExactlyOnceRelease"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			failed, logs := runRecorded(tt.harness)
			require.NotEmpty(t, failed, "the suite passed a broken limiter")
			assert.Contains(t, failed, tt.want, "failed checks: %v", failed)
			for _, name := range failed {
				t.Logf("%s failed:\n  %s", name, strings.Join(logs[name][:min(len(logs[name]), 3)], "\n  "))
			}
			assert.True(t, slices.Contains(failed, tt.want))
		})
	}
}
