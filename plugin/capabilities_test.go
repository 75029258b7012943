package plugin_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/conformance"
	"github.com/sluicerpc/sluice/conformance/capabilities"
	"github.com/sluicerpc/sluice/plugin"
	"github.com/sluicerpc/sluice/plugin/internal/testkind"
	"github.com/sluicerpc/sluice/spi"
)

// rateCaps are capabilities of the scripted rate kind whose functions make
// every input visible in the output, so that a round trip that drops or
// mixes up an argument shows.
func rateCaps() capabilities.Limiter {
	return capabilities.Limiter{
		Class:            spi.ClassRate,
		Params:           func(limit int64) spi.Params { return spi.Params{"limit": limit, "cadence": 1} },
		AltParams:        func(limit int64) spi.Params { return spi.Params{"limit": limit, "cadence": 3} },
		ReconfigureLimit: true,
		RaiseFreesUnits:  true,
		Tick:             25 * time.Millisecond,
		HintSlack:        time.Microsecond,
		Allowance: func(p spi.Params, from, to time.Time) int64 {
			return p["limit"]*1_000_000 + p["cadence"]*1000 + int64(to.Sub(from)/time.Millisecond)
		},
	}
}

// TestCapabilitiesCrossTheBridge: the declared scalars come back equal, and
// the functions run in the plugin with the host's arguments.
func TestCapabilitiesCrossTheBridge(t *testing.T) {
	want := rateCaps()
	p := plugin.ConnectInProcessConfig(t, plugin.ServeConfig{LimiterKinds: []plugin.LimiterKindEntry{
		{Kind: &scripted{}, Capabilities: &want},
	}}, plugin.WithLogger(quietLogger()))
	k := p.LimiterKinds()[0]
	got, ok := k.Capabilities()
	require.True(t, ok)
	assert.Equal(t, want.Class, got.Class)
	assert.Equal(t, want.ReconfigureLimit, got.ReconfigureLimit)
	assert.Equal(t, want.RaiseFreesUnits, got.RaiseFreesUnits)
	assert.Equal(t, want.Tick, got.Tick)
	assert.Equal(t, want.HintSlack, got.HintSlack)
	require.NotNil(t, got.AltParams)
	require.NotNil(t, got.Allowance)
	require.NoError(t, got.Validate())

	from := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, limit := range []int64{1, 7, 64} {
		assert.Equal(t, want.Params(limit), got.Params(limit))
		assert.Equal(t, want.AltParams(limit), got.AltParams(limit))
		for _, d := range []time.Duration{0, time.Millisecond, 2500 * time.Millisecond} {
			p := want.AltParams(limit)
			assert.Equal(t, want.Allowance(p, from, from.Add(d)), got.Allowance(p, from, from.Add(d)), "limit %d, d %v", limit, d)
		}
	}
}

// TestCapabilitiesOptionalParts: a kind without capabilities says so; a
// concurrency kind without AltParams gets neither AltParams nor Allowance.
func TestCapabilitiesOptionalParts(t *testing.T) {
	caps := testkind.Capabilities()
	p := plugin.ConnectInProcessConfig(t, plugin.ServeConfig{LimiterKinds: []plugin.LimiterKindEntry{
		{Kind: testkind.Kind{}, Capabilities: &caps},
		{Kind: namedKind{name: "bare", class: spi.ClassConcurrency}},
	}}, plugin.WithLogger(quietLogger()))
	got, ok := p.LimiterKinds()[0].Capabilities()
	require.True(t, ok)
	assert.Nil(t, got.AltParams)
	assert.Nil(t, got.Allowance)
	assert.Equal(t, testkind.Params(5), got.Params(5))
	_, ok = p.LimiterKinds()[1].Capabilities()
	assert.False(t, ok)
}

// TestCapabilitiesPanicWhenUnreachable: the functions cannot return an
// error, so they panic with ErrPluginUnavailable once the plugin is gone.
func TestCapabilitiesPanicWhenUnreachable(t *testing.T) {
	k, err := plugin.LoadLimiterKind(pluginPath, plugin.WithLogger(quietLogger()))
	require.NoError(t, err)
	caps, ok := k.Capabilities()
	require.True(t, ok)
	require.NoError(t, k.Close())
	defer func() {
		r := recover()
		require.NotNil(t, r, "Params did not panic")
		err, isErr := r.(error)
		require.True(t, isErr, "panic value %v", r)
		assert.True(t, errors.Is(err, plugin.ErrPluginUnavailable), "%v", err)
	}()
	caps.Params(1)
}

// TestCheckLimiterWithDeclaredCapabilities is what "sluice conformance
// --plugin" does: the suite runs against the plugin's kind with the
// capabilities the plugin declared.
func TestCheckLimiterWithDeclaredCapabilities(t *testing.T) {
	p, err := plugin.Open(pluginPath, plugin.WithLogger(quietLogger()))
	require.NoError(t, err)
	defer func() { _ = p.Close() }()
	k := p.LimiterKinds()[0]
	caps, ok := k.Capabilities()
	require.True(t, ok)
	r := conformance.CheckLimiter(k.Name(), func() (conformance.LimiterHarness, error) {
		return conformance.HarnessOf(k, caps), nil
	})
	assert.True(t, r.Passed(), "%s", describe(r))
	assert.Zero(t, k.Failures())
}

func describe(r conformance.Report) string {
	s := ""
	for _, c := range r.Checks {
		s += fmt.Sprintf("%s %s %q\n", c.Name, c.Outcome, c.Log)
	}
	return s
}
