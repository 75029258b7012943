// Package concurrencytest describes the concurrency limiter kind to the
// conformance suite. It is a package of its own so that the kind's runtime
// package does not import the conformance module, while its tests, the
// built-in plugin binary and "sluice conformance" share one description.
package concurrencytest

import (
	"github.com/sluicerpc/sluice/conformance/capabilities"
	"github.com/sluicerpc/sluice/limiters/concurrency"
	"github.com/sluicerpc/sluice/spi"
)

// Capabilities describes concurrency.Kind: a concurrency class whose limit
// can be reconfigured in both directions.
func Capabilities() capabilities.Limiter {
	return capabilities.Limiter{
		Class:            spi.ClassConcurrency,
		Params:           func(limit int64) spi.Params { return concurrency.Spec(limit).Params },
		ReconfigureLimit: true,
	}
}
