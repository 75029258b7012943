package concurrency_test

import (
	"testing"

	"github.com/sluicerpc/sluice/conformance"
	"github.com/sluicerpc/sluice/limiters/concurrency"
	"github.com/sluicerpc/sluice/limiters/concurrency/concurrencytest"
	"github.com/sluicerpc/sluice/spi"
)

// harness describes the concurrency kind to the conformance suite.
type harness struct{}

func (harness) Kind() spi.LimiterKind                         { return concurrency.Kind{} }
func (harness) Capabilities() conformance.LimiterCapabilities { return concurrencytest.Capabilities() }
func (harness) Close()                                        {}

func TestConformance(t *testing.T) {
	conformance.RunLimiterTests(t, func(*testing.T) (conformance.LimiterHarness, error) { return harness{}, nil })
}
