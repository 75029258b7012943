//go:build linux

package plugin_test

import (
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/plugin"
	"github.com/sluicerpc/sluice/plugin/internal/testpolicy"
	"github.com/sluicerpc/sluice/spi"
)

// TestEndpointPolicyCrashedPlugin: once the plugin is killed, TryAcquire
// refuses with ErrPluginUnavailable recorded and Report records the
// failure too; neither panics, and both are counted.
func TestEndpointPolicyCrashedPlugin(t *testing.T) {
	p, err := plugin.Open(pluginPath, plugin.WithLogger(quietLogger()))
	require.NoError(t, err)
	defer func() { _ = p.Close() }()
	ep, err := p.NewEndpointPolicy(testpolicy.Name)
	require.NoError(t, err)
	d := ep.TryAcquire("e", "m")
	require.True(t, d.Allowed)

	pid := p.Pid()
	require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
	waitFor(t, "the killed plugin to exit", func() bool { return processGone(pid) })

	assert.Equal(t, spi.EndpointDecision{}, ep.TryAcquire("e", "m"), "a failing plugin refuses")
	err = ep.Err()
	require.ErrorIs(t, err, plugin.ErrPluginUnavailable)
	assert.ErrorContains(t, err, `endpoint policy "`+testpolicy.Name+`"`)
	assert.ErrorContains(t, err, "try-acquire")
	assert.ErrorIs(t, p.Err(), plugin.ErrPluginUnavailable)
	assert.Equal(t, uint64(1), p.Failures())

	assert.NotPanics(t, func() { ep.Report(spi.AttemptOutcome{Kind: spi.OutcomeSuccess}, d.Token) })
	assert.ErrorContains(t, ep.Err(), "report")
	assert.Equal(t, uint64(2), p.Failures())
	_, err = p.NewEndpointPolicy(testpolicy.Name)
	assert.ErrorIs(t, err, plugin.ErrPluginUnavailable)
	assert.NoError(t, ep.Close())
}
