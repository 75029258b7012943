package window_test

import (
	"testing"

	"github.com/sluicerpc/sluice/conformance"
	"github.com/sluicerpc/sluice/limiters/window"
	"github.com/sluicerpc/sluice/limiters/window/windowtest"
)

func TestConformanceFixed(t *testing.T) {
	conformance.RunLimiterTests(t, func(*testing.T) (conformance.LimiterHarness, error) {
		return conformance.HarnessOf(window.FixedKind{}, windowtest.FixedCapabilities()), nil
	})
}

func TestConformanceSliding(t *testing.T) {
	conformance.RunLimiterTests(t, func(*testing.T) (conformance.LimiterHarness, error) {
		return conformance.HarnessOf(window.SlidingKind{}, windowtest.SlidingCapabilities()), nil
	})
}
