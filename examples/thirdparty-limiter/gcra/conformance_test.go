package gcra_test

import (
	"testing"

	"github.com/sluicerpc/sluice/conformance"
	"github.com/sluicerpc/sluice/examples/thirdparty-limiter/gcra"
	"github.com/sluicerpc/sluice/examples/thirdparty-limiter/gcra/gcratest"
	"github.com/sluicerpc/sluice/spi"
)

// harness describes a GCRA kind (in process, or loaded from the plugin
// binary) to the conformance suite.
type harness struct {
	kind  spi.LimiterKind
	caps  conformance.LimiterCapabilities
	close func()
}

func (h harness) Kind() spi.LimiterKind                         { return h.kind }
func (h harness) Capabilities() conformance.LimiterCapabilities { return h.caps }

func (h harness) Close() {
	if h.close != nil {
		h.close()
	}
}

func TestConformance(t *testing.T) {
	conformance.RunLimiterTests(t, func(*testing.T) (conformance.LimiterHarness, error) {
		return harness{kind: gcra.Kind{}, caps: gcratest.Capabilities()}, nil
	})
}
