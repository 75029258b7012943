package window_test

import (
	"testing"

	"github.com/sluicerpc/sluice/conformance"
	"github.com/sluicerpc/sluice/limiters/window"
	"github.com/sluicerpc/sluice/limiters/window/windowtest"
	"github.com/sluicerpc/sluice/spi"
)

// harness describes one window kind to the conformance suite.
type harness struct {
	kind spi.LimiterKind
	caps conformance.LimiterCapabilities
}

func (h harness) Kind() spi.LimiterKind                         { return h.kind }
func (h harness) Capabilities() conformance.LimiterCapabilities { return h.caps }
func (harness) Close()                                          {}

func TestConformanceFixed(t *testing.T) {
	conformance.RunLimiterTests(t, func(*testing.T) (conformance.LimiterHarness, error) {
		return harness{window.FixedKind{}, windowtest.FixedCapabilities()}, nil
	})
}

func TestConformanceSliding(t *testing.T) {
	conformance.RunLimiterTests(t, func(*testing.T) (conformance.LimiterHarness, error) {
		return harness{window.SlidingKind{}, windowtest.SlidingCapabilities()}, nil
	})
}
