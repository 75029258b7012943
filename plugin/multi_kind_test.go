package plugin_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/plugin"
	"github.com/sluicerpc/sluice/plugin/internal/testkind"
	"github.com/sluicerpc/sluice/spi"
)

// modeEnv selects what the test plugin serves (see internal/testplugin).
const modeEnv = "SLUICE_TESTPLUGIN_MODE"

// secondName is the second kind the test plugin serves in mode "multi".
const secondName = "plugintest.second"

func TestOpenServesEveryKind(t *testing.T) {
	t.Setenv(modeEnv, "multi")
	p, err := plugin.Open(pluginPath, plugin.WithLogger(quietLogger()))
	require.NoError(t, err)
	defer func() { _ = p.Close() }()

	kinds := p.LimiterKinds()
	require.Len(t, kinds, 2)
	assert.Equal(t, testkind.Name, kinds[0].Name())
	assert.Equal(t, secondName, kinds[1].Name())

	// Each kind's limiters are built by that kind, in one process.
	now := time.Unix(10, 0)
	for _, k := range kinds {
		assert.Equal(t, spi.ClassConcurrency, k.Class())
		assert.Same(t, p, k.Plugin())
		assert.Equal(t, p.Pid(), k.Pid())
		l, err := k.New(testkind.Params(2), now)
		require.NoError(t, err)
		assert.True(t, l.TryAcquire(now, 2).Granted)
		assert.False(t, l.TryAcquire(now, 1).Granted, "%s: each limiter has its own state", k.Name())
	}

	var reg spi.Registry
	require.NoError(t, p.Register(&reg))
	for _, name := range []string{testkind.Name, secondName} {
		got, err := reg.Lookup(name)
		require.NoError(t, err)
		assert.Equal(t, name, got.Name())
	}
	// A second registration of the same kinds is refused by the registry.
	assert.Error(t, p.Register(&reg))

	k, err := p.LimiterKind(secondName)
	require.NoError(t, err)
	assert.Same(t, kinds[1], k)
	_, err = p.LimiterKind("nope")
	assert.ErrorContains(t, err, `no limiter kind "nope"`)
	assert.ErrorContains(t, err, secondName, "the error lists what the plugin serves")
}

func TestLoadLimiterKindChoosesAKind(t *testing.T) {
	t.Setenv(modeEnv, "multi")
	_, err := plugin.LoadLimiterKind(pluginPath, plugin.WithLogger(quietLogger()))
	assert.ErrorContains(t, err, "serves 2 limiter kinds")
	assert.ErrorContains(t, err, "WithKind")

	_, err = plugin.LoadLimiterKind(pluginPath, plugin.WithLogger(quietLogger()), plugin.WithKind("nope"))
	assert.ErrorContains(t, err, `no limiter kind "nope"`)

	k, err := plugin.LoadLimiterKind(pluginPath, plugin.WithLogger(quietLogger()), plugin.WithKind(secondName))
	require.NoError(t, err)
	defer func() { _ = k.Close() }()
	assert.Equal(t, secondName, k.Name())
	_, declared := k.Capabilities()
	assert.False(t, declared, "the second kind declares no capabilities")
}

// TestClosingAKindClosesThePlugin: a kind is a view of its plugin.
func TestClosingAKindClosesThePlugin(t *testing.T) {
	t.Setenv(modeEnv, "multi")
	p, err := plugin.Open(pluginPath, plugin.WithLogger(quietLogger()))
	require.NoError(t, err)
	first, second := p.LimiterKinds()[0], p.LimiterKinds()[1]
	require.NoError(t, first.Close())
	_, err = second.New(testkind.Params(1), time.Unix(1, 0))
	assert.True(t, errors.Is(err, plugin.ErrPluginUnavailable), "%v", err)
	assert.NoError(t, p.Close(), "Close is idempotent")
}

// TestInvalidServeConfigExits: a binary whose configuration Serve refuses
// exits before the handshake, and Open says so.
func TestInvalidServeConfigExits(t *testing.T) {
	t.Setenv(modeEnv, "invalid")
	_, err := plugin.Open(pluginPath, plugin.WithLogger(quietLogger()), plugin.WithStartTimeout(waitLimit))
	require.Error(t, err)
	assert.ErrorContains(t, err, "start")
	assert.ErrorContains(t, err, "served twice", "the error carries the plugin's own reason")
}
