package tokenbucket_test

import (
	"testing"

	"github.com/sluicerpc/sluice/conformance"
	"github.com/sluicerpc/sluice/limiters/tokenbucket"
	"github.com/sluicerpc/sluice/limiters/tokenbucket/tokenbuckettest"
	"github.com/sluicerpc/sluice/spi"
)

// harness describes the tokenbucket kind to the conformance suite.
type harness struct{}

func (harness) Kind() spi.LimiterKind                         { return tokenbucket.Kind{} }
func (harness) Capabilities() conformance.LimiterCapabilities { return tokenbuckettest.Capabilities() }
func (harness) Close()                                        {}

func TestConformance(t *testing.T) {
	conformance.RunLimiterTests(t, func(*testing.T) (conformance.LimiterHarness, error) { return harness{}, nil })
}
