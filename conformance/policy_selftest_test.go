package conformance

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/spi"
)

// runPolicyRecorded runs every endpoint policy check against h with
// CheckEndpointPolicy and returns the names of the checks that failed,
// with what each logged.
func runPolicyRecorded(h EndpointPolicyHarness) (failed []string, logs map[string][]string) {
	logs = map[string][]string{}
	r := CheckEndpointPolicy("selftest", func() (EndpointPolicyHarness, error) { return h, nil })
	for _, c := range r.Checks {
		if c.Outcome == Failed {
			failed = append(failed, c.Name)
			logs[c.Name] = c.Log
		}
	}
	return failed, logs
}

// TestCorrectPoliciesPass runs the suite, as a third party would, on the
// correct fakes the broken ones are derived from.
func TestCorrectPoliciesPass(t *testing.T) {
	t.Run("bound", func(t *testing.T) {
		RunEndpointPolicyTests(t, func(*testing.T) (EndpointPolicyHarness, error) { return boundHarness(boundFaults{}), nil })
	})
	t.Run("breaker", func(t *testing.T) {
		RunEndpointPolicyTests(t, func(*testing.T) (EndpointPolicyHarness, error) { return breakerHarness(breakerFaults{}), nil })
	})
	t.Run("breaker-nondeterministic", func(t *testing.T) {
		RunEndpointPolicyTests(t, func(*testing.T) (EndpointPolicyHarness, error) {
			return EndpointPolicyHarnessOf(func(c spi.Clock) (spi.EndpointPolicy, error) { return newBreakerPolicy(breakerFaults{}, c), nil },
				EndpointPolicyCapabilities{}), nil
		})
	})
}

// TestCheckEndpointPolicyReportsEveryCheck: a correct policy gets one
// result per check, in order, none failed, and the recorder agrees with
// go test.
func TestCheckEndpointPolicyReportsEveryCheck(t *testing.T) {
	for _, h := range []EndpointPolicyHarness{boundHarness(boundFaults{}), breakerHarness(breakerFaults{})} {
		r := CheckEndpointPolicy("fake", func() (EndpointPolicyHarness, error) { return h, nil })
		require.Len(t, r.Checks, len(endpointPolicyChecks))
		for i, c := range r.Checks {
			assert.Equal(t, endpointPolicyChecks[i].name, c.Name)
			assert.Equal(t, Passed, c.Outcome, "%s: %v", c.Name, c.Log)
		}
		assert.True(t, r.Passed())
	}
}

// TestCheckEndpointPolicyInvalidHarness: invalid capabilities fail every
// check, and so does a harness that cannot build a policy.
func TestCheckEndpointPolicyInvalidHarness(t *testing.T) {
	bad := EndpointPolicyHarnessOf(func(c spi.Clock) (spi.EndpointPolicy, error) { return newBreakerPolicy(breakerFaults{}, c), nil },
		EndpointPolicyCapabilities{Bounded: -1})
	r := CheckEndpointPolicy("bad", func() (EndpointPolicyHarness, error) { return bad, nil })
	assert.Len(t, r.Failed(), len(endpointPolicyChecks))
	assert.Contains(t, strings.Join(r.Checks[0].Log, "\n"), "negative Bounded")

	nilPolicy := EndpointPolicyHarnessOf(func(spi.Clock) (spi.EndpointPolicy, error) { return nil, nil }, EndpointPolicyCapabilities{})
	r = CheckEndpointPolicy("nil", func() (EndpointPolicyHarness, error) { return nilPolicy, nil })
	assert.Len(t, r.Failed(), len(endpointPolicyChecks))
}

// TestBrokenPoliciesFail proves that the suite catches each deliberately
// broken policy, and names the check that should catch it.
func TestBrokenPoliciesFail(t *testing.T) {
	tests := []struct {
		name    string
		harness EndpointPolicyHarness
		want    string // the check that must fail
	}{
		{"panics on an unknown token", boundHarness(boundFaults{panicUnknown: true}), "UnknownAndRepeatedTokens"},
		{"repeated Report credited twice", boundHarness(boundFaults{doubleCredit: true}), "UnknownAndRepeatedTokens"},
		{"check-then-increment bound", boundHarness(boundFaults{racy: true}), "ConcurrentUse"},
		{"leaks a slot per Report", boundHarness(boundFaults{leak: true}), "ReportsPairWithTokens"},
		{"token 0 counted as a failure", breakerHarness(breakerFaults{zeroTokenFails: true}), "UnknownAndRepeatedTokens"},
		{"repeated Report counted twice", breakerHarness(breakerFaults{doubleCount: true}), "UnknownAndRepeatedTokens"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			failed, logs := runPolicyRecorded(tt.harness)
			require.NotEmpty(t, failed, "the suite passed a broken policy")
			assert.Contains(t, failed, tt.want, "failed checks: %v", failed)
			for _, name := range failed {
				t.Logf("%s failed:\n  %s", name, strings.Join(logs[name][:min(len(logs[name]), 3)], "\n  "))
			}
		})
	}
}
