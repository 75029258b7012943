package conformance

import "github.com/sluicerpc/sluice/spi"

// PlantedLimiter is one broken limiter of the self-test (brokenLimiters),
// exported for the test that runs them through the plugin bridge
// (bridge_selftest_test.go, package conformance_test).
type PlantedLimiter struct {
	Name, Class string
	Want        string // the check that must fail
	Racy        bool
	Kind        spi.LimiterKind
	Caps        LimiterCapabilities
}

// PlantedLimiters lists the self-test's broken limiters, in order.
func PlantedLimiters() []PlantedLimiter {
	out := make([]PlantedLimiter, len(brokenLimiters))
	for i, b := range brokenLimiters {
		out[i] = PlantedLimiter{Name: b.name, Class: b.class, Want: b.want, Racy: b.racy, Kind: b.harness.Kind(), Caps: b.harness.Capabilities()}
	}
	return out
}

// CheckCatches runs on h what TestBrokenLimitersFail runs: every check
// but the racing ones, and want. It returns the checks that failed and
// what each logged.
func CheckCatches(h LimiterHarness, want string) (failed []string, logs map[string][]string) {
	return runRecordedFor(h, want)
}
