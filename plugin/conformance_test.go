package plugin_test

import (
	"testing"

	"github.com/sluicerpc/sluice/conformance"
	"github.com/sluicerpc/sluice/plugin"
	"github.com/sluicerpc/sluice/plugin/internal/testkind"
	"github.com/sluicerpc/sluice/spi"
)

// harness describes a bridged testkind.Kind to the conformance suite.
type harness struct {
	kind  spi.LimiterKind
	close func()
}

func (h harness) Kind() spi.LimiterKind { return h.kind }

func (harness) Capabilities() conformance.LimiterCapabilities {
	return conformance.LimiterCapabilities{
		Class:            spi.ClassConcurrency,
		Params:           testkind.Params,
		ReconfigureLimit: true,
	}
}

func (h harness) Close() {
	if h.close != nil {
		h.close()
	}
}

// TestConformanceInProcess runs the suite through the gRPC bridge without
// a process: every check gets its own in-process connection.
func TestConformanceInProcess(t *testing.T) {
	conformance.RunLimiterTests(t, func(t *testing.T) (conformance.LimiterHarness, error) {
		return harness{kind: plugin.ConnectInProcess(t, testkind.Kind{})}, nil
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
		return harness{kind: k, close: func() { _ = k.Close() }}, nil
	})
}
