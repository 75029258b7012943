package gcra_test

import (
	"testing"

	"github.com/sluicerpc/sluice/conformance"
	"github.com/sluicerpc/sluice/examples/thirdparty-limiter/gcra"
	"github.com/sluicerpc/sluice/examples/thirdparty-limiter/gcra/gcratest"
)

func TestConformance(t *testing.T) {
	conformance.RunLimiterTests(t, func(*testing.T) (conformance.LimiterHarness, error) {
		return conformance.HarnessOf(gcra.Kind{}, gcratest.Capabilities()), nil
	})
}
