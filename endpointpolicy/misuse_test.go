package endpointpolicy_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/endpointpolicy"
	"github.com/sluicerpc/sluice/spi"
)

// policyUnderTest is a policy and a probe of its bookkeeping for endpoint
// "a": the attempts it believes outstanding.
type policyUnderTest struct {
	name        string
	policy      spi.EndpointPolicy
	outstanding func() int
}

func policiesUnderTest(t *testing.T) []policyUnderTest {
	b, err := endpointpolicy.NewCircuitBreaker(endpointpolicy.CircuitBreakerOptions{Clock: newFakeClock()})
	require.NoError(t, err)
	th, err := endpointpolicy.NewAdaptiveThrottle(endpointpolicy.AdaptiveThrottleOptions{
		Clock: newFakeClock(),
		Rand:  func() float64 { return math.Nextafter(1, 0) }, // p < 1: never refuses
	})
	require.NoError(t, err)
	c, err := endpointpolicy.NewEndpointConcurrency(4)
	require.NoError(t, err)
	return []policyUnderTest{
		{"breaker", b, func() int { return snapshotOf(t, b, "a").Outstanding }},
		{"throttle", th, func() int { return th.Stats("a").Outstanding }},
		{"concurrency", c, func() int { return c.InFlight("a") }},
	}
}

// TestReportToleratesBadTokens: zero, unknown, foreign and repeated tokens
// never panic and release nothing.
func TestReportToleratesBadTokens(t *testing.T) {
	outcomes := []spi.AttemptOutcome{success, sendFailure, goAway, cancelled, remote(8), {}, {Kind: 200}}
	for _, p := range policiesUnderTest(t) {
		t.Run(p.name, func(t *testing.T) {
			d1, d2 := p.policy.TryAcquire("a", "m"), p.policy.TryAcquire("a", "m")
			require.True(t, d1.Allowed && d2.Allowed)
			require.NotEqual(t, d1.Token, d2.Token)
			require.Equal(t, 2, p.outstanding())
			bad := []uint64{0, 1, math.MaxUint64, d1.Token ^ 1, d1.Token + 1<<20, d1.Token + 1<<40, d1.Token | 0xFFFFF<<20}
			for _, o := range outcomes {
				for _, tok := range bad {
					assert.NotPanics(t, func() { p.policy.Report(o, tok) })
				}
			}
			assert.Equal(t, 2, p.outstanding(), "bad tokens release nothing")
			p.policy.Report(success, d1.Token)
			assert.Equal(t, 1, p.outstanding())
			for range 3 {
				p.policy.Report(success, d1.Token)
			}
			assert.Equal(t, 1, p.outstanding(), "a repeated token releases nothing")

			// A reused slot gets a new token: the old one stays dead.
			d3 := p.policy.TryAcquire("a", "m")
			require.True(t, d3.Allowed)
			assert.NotEqual(t, d1.Token, d3.Token)
			p.policy.Report(success, d1.Token)
			assert.Equal(t, 2, p.outstanding())
			p.policy.Report(success, d2.Token)
			p.policy.Report(success, d3.Token)
			assert.Equal(t, 0, p.outstanding())
		})
	}
}

// TestTokensAreNotInterchangeable: a token from another instance of the
// same policy, or for another endpoint, is unknown.
func TestTokensAreNotInterchangeable(t *testing.T) {
	ps, others := policiesUnderTest(t), policiesUnderTest(t)
	for i, p := range ps {
		t.Run(p.name, func(t *testing.T) {
			mine := p.policy.TryAcquire("a", "m")
			require.True(t, mine.Allowed)
			// The other instance has two endpoints, so its "b" token's
			// endpoint id does not exist here.
			others[i].policy.TryAcquire("a", "m")
			foreign := others[i].policy.TryAcquire("b", "m")
			require.True(t, foreign.Allowed)
			p.policy.Report(success, foreign.Token)
			assert.Equal(t, 1, p.outstanding())
			p.policy.Report(success, mine.Token)
			assert.Equal(t, 0, p.outstanding())
		})
	}
}
