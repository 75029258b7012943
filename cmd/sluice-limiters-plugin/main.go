// Command sluice-limiters-plugin serves sluice's built-in limiter kinds
// (concurrency, tokenbucket, fixedwindow, slidingwindow) as one plugin
// binary, each with the conformance capabilities its module declares.
//
// It exists to prove the plug-in bridge with the conformance suite:
//
//	go build -o /tmp/limiters ./cmd/sluice-limiters-plugin
//	go run ./cmd/sluice conformance --plugin /tmp/limiters
//
// and as the reference for a binary that serves several kinds. A host that
// wants these kinds should import their modules instead: in process a call
// costs nanoseconds, through a plugin tens of microseconds.
package main

import (
	"github.com/sluicerpc/sluice/conformance/capabilities"
	"github.com/sluicerpc/sluice/limiters/concurrency"
	"github.com/sluicerpc/sluice/limiters/concurrency/concurrencytest"
	"github.com/sluicerpc/sluice/limiters/tokenbucket"
	"github.com/sluicerpc/sluice/limiters/tokenbucket/tokenbuckettest"
	"github.com/sluicerpc/sluice/limiters/window"
	"github.com/sluicerpc/sluice/limiters/window/windowtest"
	"github.com/sluicerpc/sluice/plugin"
	"github.com/sluicerpc/sluice/spi"
)

// entries lists the served kinds in order.
func entries() []plugin.LimiterKindEntry {
	entry := func(k spi.LimiterKind, c capabilities.Limiter) plugin.LimiterKindEntry {
		return plugin.LimiterKindEntry{Kind: k, Capabilities: &c}
	}
	return []plugin.LimiterKindEntry{
		entry(concurrency.Kind{}, concurrencytest.Capabilities()),
		entry(tokenbucket.Kind{}, tokenbuckettest.Capabilities()),
		entry(window.FixedKind{}, windowtest.FixedCapabilities()),
		entry(window.SlidingKind{}, windowtest.SlidingCapabilities()),
	}
}

func main() {
	plugin.Serve(plugin.ServeConfig{
		LimiterKinds: entries(),
		Logger:       plugin.NewPluginLogger("sluice-limiters-plugin"),
	})
}
