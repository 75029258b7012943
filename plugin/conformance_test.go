package plugin_test

import (
	"testing"

	"github.com/sluicerpc/sluice/conformance"
	"github.com/sluicerpc/sluice/plugin"
	"github.com/sluicerpc/sluice/plugin/internal/testkind"
)

// TestConformanceInProcess runs the suite through the gRPC bridge without
// a process: every check gets its own in-process connection.
func TestConformanceInProcess(t *testing.T) {
	conformance.RunLimiterTests(t, func(t *testing.T) (conformance.LimiterHarness, error) {
		return conformance.HarnessOf(plugin.ConnectInProcess(t, testkind.Kind{}), testkind.Capabilities()), nil
	})
}

// TestConformanceSubprocess runs the suite against the test plugin binary:
// every check gets its own plugin process.
func TestConformanceSubprocess(t *testing.T) {
	conformance.RunLimiterTests(t, func(t *testing.T) (conformance.LimiterHarness, error) {
		k, err := plugin.LoadLimiterKind(pluginPath, plugin.WithLogger(quietLogger()))
		if err != nil {
			return nil, err
		}
		return conformance.HarnessOf(k, testkind.Capabilities(), func() { _ = k.Close() }), nil
	})
}
