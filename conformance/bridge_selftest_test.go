package conformance_test

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/conformance"
	"github.com/sluicerpc/sluice/plugin"
)

// servePlantedEnv makes this test binary a plugin serving the planted
// limiter of that index (conformance.PlantedLimiters): the host side of
// TestPlantedLimitersFailThroughThePluginBridge starts it so.
const servePlantedEnv = "SLUICE_CONFORMANCE_SERVE_PLANTED"

func init() {
	v := os.Getenv(servePlantedEnv)
	if v == "" {
		return
	}
	planted := conformance.PlantedLimiters()
	i, err := strconv.Atoi(v)
	if err != nil || i < 0 || i >= len(planted) {
		fmt.Fprintf(os.Stderr, "%s=%q: not a planted limiter's index (0 to %d)\n", servePlantedEnv, v, len(planted)-1)
		os.Exit(2)
	}
	plugin.ServeLimiterKind(planted[i].Kind)
	os.Exit(0)
}

// knownBridgeEscapes are the broken limiters that the suite catches in
// process but not (every run) through the bridge: open (issue 24 section
// 2), listed so that the table shows them and any other escape fails.
var knownBridgeEscapes = map[string]string{
	"limit and held in separate atomics, limit read once":                       "GrantsRespectLimitInForce's duel: each call crosses the bridge, which widens the gap between two attempts more than the race window",
	"snapshot from acquired and released counters, a Gosched between the loads": "SnapshotExactUnderConcurrency: the same, for Snapshot against grants",
	"a window length shaved by 0.02%":                                           "NoDrift through the bridge stops each cadence at 3 s of wall time, before 0.02% has added up to a whole window",
}

// TestPlantedLimitersFailThroughThePluginBridge runs the self-test's broken
// limiters as a third party ships them: each served by a plugin process of
// its own (this test binary, started again), checked by the suite through
// the gRPC bridge; the check meant to catch each must fail, as it does in
// process (TestBrokenLimitersFail). A racy one is run once here (in
// process it must fail 20 runs of 20). It prints its table per class
// (selftest-bridge-table lines). It starts 40-odd processes and runs the
// whole suite through each: make conformance-bridge runs it
// (SLUICE_CONFORMANCE_BRIDGE=1); make test does not.
func TestPlantedLimitersFailThroughThePluginBridge(t *testing.T) {
	if os.Getenv("SLUICE_CONFORMANCE_BRIDGE") == "" {
		t.Skip("long: make conformance-bridge runs it (SLUICE_CONFORMANCE_BRIDGE=1)")
	}
	self, err := os.Executable()
	require.NoError(t, err)
	// Plugins put their sockets in TMPDIR.
	t.Setenv("TMPDIR", t.TempDir())
	type tally struct{ planted, caught int }
	byClass := map[string]*tally{}
	for i, pl := range conformance.PlantedLimiters() {
		if byClass[pl.Class] == nil {
			byClass[pl.Class] = &tally{}
		}
		byClass[pl.Class].planted++
		t.Run(pl.Name, func(t *testing.T) {
			t.Setenv(servePlantedEnv, strconv.Itoa(i))
			k, err := plugin.LoadLimiterKind(self, plugin.WithLogger(hclog.NewNullLogger()))
			require.NoError(t, err)
			defer func() { _ = k.Close() }()
			failed, logs := conformance.CheckCatches(conformance.HarnessOf(k, pl.Caps), pl.Want)
			caught := slices.Contains(failed, pl.Want)
			if caught {
				byClass[pl.Class].caught++
			}
			if why, known := knownBridgeEscapes[pl.Name]; known {
				t.Logf("KNOWN ESCAPE through the bridge (caught this run: %v): %s", caught, why)
				return
			}
			assert.True(t, caught, "through the bridge, %s did not fail; the failed checks were %v", pl.Want, failed)
			for _, name := range failed {
				t.Logf("%s failed:\n  %s", name, strings.Join(logs[name][:min(len(logs[name]), 2)], "\n  "))
			}
		})
	}
	var classes []string
	for c := range byClass {
		classes = append(classes, c)
	}
	slices.Sort(classes)
	t.Logf("selftest-bridge-table %-34s %7s %6s   (%d known escapes: %s)", "class", "planted", "caught", len(knownBridgeEscapes), "see knownBridgeEscapes")
	for _, c := range classes {
		t.Logf("selftest-bridge-table %-34s %7d %6d", c, byClass[c].planted, byClass[c].caught)
	}
}
