package conformance

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/spi"
)

// checkNames lists the suite's checks in order.
func checkNames() []string {
	names := make([]string, len(limiterChecks))
	for i, c := range limiterChecks {
		names[i] = c.name
	}
	return names
}

// TestCheckLimiterReportsEveryCheck: a correct kind gets one result per
// check, in order, and none failed.
func TestCheckLimiterReportsEveryCheck(t *testing.T) {
	r := CheckLimiter("bucket", func() (LimiterHarness, error) { return bucketHarness(bucketFaults{}), nil })
	require.Len(t, r.Checks, len(limiterChecks))
	for i, c := range r.Checks {
		assert.Equal(t, limiterChecks[i].name, c.Name)
		assert.NotEqual(t, Failed, c.Outcome, "%s: %v", c.Name, c.Log)
	}
	assert.True(t, r.Passed())
	assert.Empty(t, r.Failed())
}

// TestCheckLimiterSkips: checks that do not apply are reported skipped, not
// passed: a semaphore that cannot be reconfigured skips the checks of
// reconfiguration, and a concurrency kind skips the rate hints.
func TestCheckLimiterSkips(t *testing.T) {
	h := semHarness(semFaults{})
	h.caps.ReconfigureLimit = false
	r := CheckLimiter("sem", func() (LimiterHarness, error) { return h, nil })
	require.True(t, r.Passed(), "%+v", r)
	skipped := map[string]bool{}
	for _, c := range r.Checks {
		if c.Outcome == Skipped {
			skipped[c.Name] = true
		}
	}
	assert.True(t, skipped["RaiseNeverRefills"], "%+v", r.Checks)
	assert.True(t, skipped["ShrinkNeverRevokes"], "%+v", r.Checks)
}

// TestCheckLimiterHarnessErrors: a harness that cannot be created, or
// that declares unusable capabilities, fails every check with the reason.
func TestCheckLimiterHarnessErrors(t *testing.T) {
	t.Run("creation", func(t *testing.T) {
		r := CheckLimiter("broken", func() (LimiterHarness, error) { return nil, errors.New("no plugin") })
		assert.Equal(t, checkNames(), r.Failed())
		for _, c := range r.Checks {
			assert.Contains(t, strings.Join(c.Log, "\n"), "creating the harness: no plugin")
		}
	})
	t.Run("capabilities", func(t *testing.T) {
		h := bucketHarness(bucketFaults{})
		h.caps.Allowance = nil
		r := CheckLimiter("broken", func() (LimiterHarness, error) { return h, nil })
		assert.Equal(t, checkNames(), r.Failed())
		assert.Contains(t, strings.Join(r.Checks[0].Log, "\n"), "a rate kind must set Allowance")
	})
	t.Run("class", func(t *testing.T) {
		h := semHarness(semFaults{})
		h.caps.Class = spi.ClassRate
		r := CheckLimiter("broken", func() (LimiterHarness, error) { return h, nil })
		assert.Equal(t, checkNames(), r.Failed())
	})
}

// TestCheckLimiterSurvivesPanics: a limiter that panics fails the check it
// panicked in, and the run goes on.
func TestCheckLimiterSurvivesPanics(t *testing.T) {
	h := semHarness(semFaults{})
	k := h.kind
	build := k.build
	k.build = func(p spi.Params, now time.Time) spi.Limiter { return panicky{build(p, now)} }
	h.kind = k
	r := CheckLimiter("panicky", func() (LimiterHarness, error) { return h, nil })
	require.Len(t, r.Checks, len(limiterChecks))
	assert.False(t, r.Passed())
	assert.Contains(t, strings.Join(r.Checks[0].Log, "\n"), "snapshot is broken")
}

// panicky panics in Snapshot.
type panicky struct{ spi.Limiter }

func (panicky) Snapshot(time.Time) spi.Snapshot { panic("snapshot is broken") }

func TestOutcomeString(t *testing.T) {
	assert.Equal(t, "PASS", Passed.String())
	assert.Equal(t, "FAIL", Failed.String())
	assert.Equal(t, "SKIP", Skipped.String())
	assert.Equal(t, "Outcome(9)", Outcome(9).String())
}
