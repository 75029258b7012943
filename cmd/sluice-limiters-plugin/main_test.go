package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/limiters/concurrency"
	"github.com/sluicerpc/sluice/limiters/tokenbucket"
	"github.com/sluicerpc/sluice/limiters/window"
	"github.com/sluicerpc/sluice/plugin"
)

// TestServesEveryBuiltinKind: the configuration is valid and names every
// built-in kind, each with capabilities. The kinds' behaviour through the
// bridge is checked by "make conformance" (sluice conformance --plugin).
func TestServesEveryBuiltinKind(t *testing.T) {
	c := plugin.ServeConfig{LimiterKinds: entries()}
	require.NoError(t, c.Validate())
	var names []string
	for _, e := range c.LimiterKinds {
		names = append(names, e.Kind.Name())
		assert.NotNil(t, e.Capabilities, e.Kind.Name())
	}
	assert.Equal(t, []string{concurrency.KindName, tokenbucket.KindName, window.FixedKindName, window.SlidingKindName}, names)
}
