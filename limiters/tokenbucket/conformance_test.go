package tokenbucket_test

import (
	"testing"

	"github.com/sluicerpc/sluice/conformance"
	"github.com/sluicerpc/sluice/limiters/tokenbucket"
	"github.com/sluicerpc/sluice/limiters/tokenbucket/tokenbuckettest"
)

func TestConformance(t *testing.T) {
	conformance.RunLimiterTests(t, func(*testing.T) (conformance.LimiterHarness, error) {
		return conformance.HarnessOf(tokenbucket.Kind{}, tokenbuckettest.Capabilities()), nil
	})
}
