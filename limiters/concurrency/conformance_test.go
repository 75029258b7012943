package concurrency_test

import (
	"testing"

	"github.com/sluicerpc/sluice/conformance"
	"github.com/sluicerpc/sluice/limiters/concurrency"
	"github.com/sluicerpc/sluice/limiters/concurrency/concurrencytest"
)

func TestConformance(t *testing.T) {
	conformance.RunLimiterTests(t, func(*testing.T) (conformance.LimiterHarness, error) {
		return conformance.HarnessOf(concurrency.Kind{}, concurrencytest.Capabilities()), nil
	})
}
