package conformance

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/sluicerpc/sluice/conformance/capabilities"
	"github.com/sluicerpc/sluice/spi"
)

// EndpointPolicyHarness describes one endpoint policy to the suite.
// RunEndpointPolicyTests creates a fresh harness for every check and closes
// it when the check ends.
type EndpointPolicyHarness interface {
	// NewPolicy returns a fresh policy that reads the time from clock
	// only. The suite's clock is fake: it moves only when the suite
	// advances it, so a policy that reads another clock (time.Now, or a
	// plugin's own) makes the time-dependent parts of the checks
	// meaningless. A check may create several policies (twins).
	NewPolicy(clock spi.Clock) (spi.EndpointPolicy, error)
	// Capabilities tells the suite what to expect from the policy.
	Capabilities() EndpointPolicyCapabilities
	// Close releases whatever the harness holds.
	Close()
}

// NewEndpointPolicyHarness creates a harness for one check.
type NewEndpointPolicyHarness func(t *testing.T) (EndpointPolicyHarness, error)

// EndpointPolicyCapabilities are what the suite needs to know about a
// policy beyond the SPI; see capabilities.EndpointPolicy. Like
// LimiterCapabilities, the type lives in a package that imports only the
// standard library and spi, so that a plugin binary can declare it.
type EndpointPolicyCapabilities = capabilities.EndpointPolicy

// EndpointPolicyHarnessOf returns the harness most policies need: newPolicy
// with caps, nothing to set up per check. Close runs closers in order.
func EndpointPolicyHarnessOf(newPolicy func(clock spi.Clock) (spi.EndpointPolicy, error), caps EndpointPolicyCapabilities, closers ...func()) EndpointPolicyHarness {
	return policyHarnessOf{newPolicy: newPolicy, caps: caps, closers: closers}
}

type policyHarnessOf struct {
	newPolicy func(spi.Clock) (spi.EndpointPolicy, error)
	caps      EndpointPolicyCapabilities
	closers   []func()
}

func (h policyHarnessOf) NewPolicy(c spi.Clock) (spi.EndpointPolicy, error) { return h.newPolicy(c) }
func (h policyHarnessOf) Capabilities() EndpointPolicyCapabilities          { return h.caps }

func (h policyHarnessOf) Close() {
	for _, c := range h.closers {
		c()
	}
}

// endpointPolicyChecks lists the endpoint policy checks in the order they
// run.
var endpointPolicyChecks = []check[EndpointPolicyHarness]{
	{"ReportsPairWithTokens", checkReportsPairWithTokens},
	{"UnknownAndRepeatedTokens", checkUnknownAndRepeatedTokens},
	{"RefusalsOweNoReport", checkRefusalsOweNoReport},
	{"ConcurrentUse", checkPolicyConcurrentUse},
	{"OutcomeKinds", checkOutcomeKinds},
}

// RunEndpointPolicyTests runs the endpoint policy conformance checks
// against the policy that newHarness describes, one subtest per check,
// each with a fresh harness. Run it with -race: ConcurrentUse races
// goroutines on purpose.
func RunEndpointPolicyTests(t *testing.T, newHarness NewEndpointPolicyHarness) {
	t.Helper()
	runTests(t, endpointPolicyChecks, newHarness, validatePolicyHarness)
}

// CheckEndpointPolicy runs the same checks as RunEndpointPolicyTests
// outside of go test and returns one result per check, like CheckLimiter.
func CheckEndpointPolicy(name string, newHarness func() (EndpointPolicyHarness, error)) Report {
	return checkAll(name, endpointPolicyChecks, newHarness, validatePolicyHarness)
}

// validatePolicyHarness rejects a harness that the checks cannot use.
func validatePolicyHarness(h EndpointPolicyHarness) error {
	if h == nil {
		return errors.New("the harness is nil")
	}
	return h.Capabilities().Validate()
}

// fakeClock is the clock every policy of a check reads: it starts at start
// and moves only when the check advances it. Policies read it from many
// goroutines in ConcurrentUse, hence the mutex.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

var _ spi.Clock = (*fakeClock)(nil)

func newFakeClock() *fakeClock { return &fakeClock{now: start} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}
