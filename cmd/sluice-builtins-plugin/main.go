// Command sluice-builtins-plugin serves sluice's built-in limiter kinds
// (concurrency, tokenbucket, fixedwindow, slidingwindow), endpoint
// policies (circuit-breaker, adaptive-throttle, endpoint-concurrency) and
// codecs (zstd, s2, gzip, br, identity, each with its bomb) as one plugin
// binary, each with its conformance capabilities.
//
// It exists to prove the plug-in bridge with the conformance suite:
//
//	go build -o /tmp/limiters ./cmd/sluice-builtins-plugin
//	go run ./cmd/sluice conformance --plugin /tmp/limiters
//
// and as the reference for a binary that serves several kinds and
// policies. A host that wants them should import their modules instead: in
// process a call costs nanoseconds, through a plugin tens of microseconds.
package main

import (
	"math/rand/v2"
	"sync"

	"github.com/sluicerpc/sluice/codecs"
	"github.com/sluicerpc/sluice/conformance/capabilities"
	"github.com/sluicerpc/sluice/endpointpolicy"
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

// endpointConcurrencyLimit is the per-endpoint bound of the served
// endpoint-concurrency policy.
const endpointConcurrencyLimit = 4

// policies lists the served endpoint policies in order; each instance runs
// on the clock the host sends.
func policies() []plugin.EndpointPolicyEntry {
	deterministic := capabilities.EndpointPolicy{Deterministic: true}
	bounded := capabilities.EndpointPolicy{Deterministic: true, Bounded: endpointConcurrencyLimit}
	return []plugin.EndpointPolicyEntry{
		{Name: "circuit-breaker", Capabilities: &deterministic, New: func(clock spi.Clock) spi.EndpointPolicy {
			b, err := endpointpolicy.NewCircuitBreaker(endpointpolicy.CircuitBreakerOptions{Clock: clock})
			if err != nil {
				panic(err) // the defaults are valid
			}
			return b
		}},
		{Name: "adaptive-throttle", Capabilities: &deterministic, New: func(clock spi.Clock) spi.EndpointPolicy {
			// A seeded source: twins decide alike (Deterministic).
			r := rand.New(rand.NewPCG(1, 2))
			var mu sync.Mutex
			t, err := endpointpolicy.NewAdaptiveThrottle(endpointpolicy.AdaptiveThrottleOptions{Clock: clock, Rand: func() float64 {
				mu.Lock()
				defer mu.Unlock()
				return r.Float64()
			}})
			if err != nil {
				panic(err)
			}
			return t
		}},
		{Name: "endpoint-concurrency", Capabilities: &bounded, New: func(spi.Clock) spi.EndpointPolicy {
			c, err := endpointpolicy.NewEndpointConcurrency(endpointConcurrencyLimit)
			if err != nil {
				panic(err)
			}
			return c
		}},
	}
}

// codecEntries lists the served codecs: the built-ins in their order of
// preference, then identity, each with codecs.Bomb for the suite.
func codecEntries() []plugin.CodecEntry {
	var out []plugin.CodecEntry
	for _, c := range append(codecs.Builtin(), codecs.Identity()) {
		name := c.Name()
		out = append(out, plugin.CodecEntry{Codec: c, Bomb: func(n int64) ([]byte, error) { return codecs.Bomb(name, n) }})
	}
	return out
}

func main() {
	plugin.Serve(plugin.ServeConfig{
		LimiterKinds:     entries(),
		EndpointPolicies: policies(),
		Codecs:           codecEntries(),
		Logger:           plugin.NewPluginLogger("sluice-builtins-plugin"),
	})
}
