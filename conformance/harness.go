package conformance

import (
	"testing"

	"github.com/sluicerpc/sluice/conformance/capabilities"
	"github.com/sluicerpc/sluice/spi"
)

// LimiterHarness describes one limiter kind to the suite. RunLimiterTests
// creates a fresh harness for every check and closes it when the check ends.
type LimiterHarness interface {
	// Kind is the kind under test. The suite builds every limiter with
	// Kind().New and changes it with Limiter.Reconfigure.
	Kind() spi.LimiterKind
	// Capabilities tells the suite how to parameterize the kind and what
	// to expect from it.
	Capabilities() LimiterCapabilities
	// Close releases whatever the harness holds.
	Close()
}

// NewLimiterHarness creates a harness for one check.
type NewLimiterHarness func(t *testing.T) (LimiterHarness, error)

// LimiterCapabilities are what the suite needs to know about a kind beyond
// the SPI; see capabilities.Limiter. The type lives in a package of its own,
// which imports only the standard library and spi, so that a plugin binary
// can declare its kind's capabilities (plugin.WithCapabilities) without
// linking the suite.
type LimiterCapabilities = capabilities.Limiter
