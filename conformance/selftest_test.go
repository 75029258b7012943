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
	logs = map[string][]string{}
	r := CheckLimiter("selftest", func() (LimiterHarness, error) { return h, nil })
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
