package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/limiters/concurrency"
	"github.com/sluicerpc/sluice/limiters/tokenbucket"
	"github.com/sluicerpc/sluice/limiters/window"
	"github.com/sluicerpc/sluice/plugin"
	"github.com/sluicerpc/sluice/spi"
)

// TestServesEveryBuiltinKind: the configuration is valid and names every
// built-in kind, each with capabilities. The kinds' behaviour through the
// bridge is checked by "make conformance" (sluice conformance --plugin).
func TestServesEveryBuiltinKind(t *testing.T) {
	c := plugin.ServeConfig{LimiterKinds: entries(), EndpointPolicies: policies(), Codecs: codecEntries()}
	require.NoError(t, c.Validate())
	var names []string
	for _, e := range c.LimiterKinds {
		names = append(names, e.Kind.Name())
		assert.NotNil(t, e.Capabilities, e.Kind.Name())
	}
	assert.Equal(t, []string{concurrency.KindName, tokenbucket.KindName, window.FixedKindName, window.SlidingKindName}, names)
	var pols []string
	for _, e := range c.EndpointPolicies {
		pols = append(pols, e.Name)
		assert.NotNil(t, e.Capabilities, e.Name)
		assert.NotNil(t, e.New(spi.SystemClock{}), e.Name)
	}
	assert.Equal(t, []string{"circuit-breaker", "adaptive-throttle", "endpoint-concurrency"}, pols)
	var cs []string
	for _, e := range c.Codecs {
		cs = append(cs, e.Codec.Name())
		b, err := e.Bomb(1 << 20)
		require.NoError(t, err, e.Codec.Name())
		if e.Codec.Name() != "identity" {
			assert.Less(t, len(b), 1<<20, "%s: a bomb is smaller than what it decodes to", e.Codec.Name())
		}
	}
	assert.Equal(t, []string{"zstd", "s2", "gzip", "br", "identity"}, cs)
}
