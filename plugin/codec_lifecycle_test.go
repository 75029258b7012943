//go:build linux

package plugin_test

import (
	"context"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/plugin"
	"github.com/sluicerpc/sluice/plugin/internal/testcodec"
)

// TestCodecPluginCrashMidCall: a plugin killed while it decodes fails
// that call, and every later one, with ErrPluginUnavailable; Compress then
// reports "would not fit" with dst unchanged.
func TestCodecPluginCrashMidCall(t *testing.T) {
	p := openCodecs(t)
	c := codec(t, p, testcodec.BlockingName)
	done := make(chan error, 1)
	go func() {
		_, err := c.Decompress(context.Background(), nil, []byte(testcodec.Wait), 10)
		done <- err
	}()
	_, err := c.Decompress(context.Background(), nil, []byte(testcodec.Entered), 10)
	require.NoError(t, err)

	pid := p.Pid()
	require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
	err = <-done
	require.ErrorIs(t, err, plugin.ErrPluginUnavailable, "the call in flight fails")
	assert.ErrorContains(t, err, "decompress")
	waitFor(t, "the killed plugin to exit", func() bool { return processGone(pid) })

	d := codec(t, p, testcodec.DeflateName)
	got, err := d.Decompress(context.Background(), []byte("k"), []byte{1}, 10)
	assert.ErrorIs(t, err, plugin.ErrPluginUnavailable)
	assert.Equal(t, []byte("k"), got)
	dst := make([]byte, 1, 100)
	out, fits, err := d.Compress(dst, []byte("abc"))
	assert.ErrorIs(t, err, plugin.ErrPluginUnavailable)
	assert.False(t, fits)
	assert.Equal(t, dst, out)
	_, err = d.Bomb(10)
	assert.ErrorIs(t, err, plugin.ErrPluginUnavailable)
	assert.GreaterOrEqual(t, p.Failures(), uint64(4))
	assert.ErrorIs(t, p.Err(), plugin.ErrPluginUnavailable)
}

// TestCodecCloseEndsACallInFlight: Close fails a decode in flight as a
// closed client, not as the host's cancellation.
func TestCodecCloseEndsACallInFlight(t *testing.T) {
	p := openCodecs(t)
	c := codec(t, p, testcodec.BlockingName)
	done := make(chan error, 1)
	go func() {
		_, err := c.Decompress(context.Background(), nil, []byte(testcodec.Wait), 10)
		done <- err
	}()
	_, err := c.Decompress(context.Background(), nil, []byte(testcodec.Entered), 10)
	require.NoError(t, err)
	require.NoError(t, p.Close())
	err = <-done
	require.ErrorIs(t, err, plugin.ErrPluginUnavailable)
	assert.ErrorContains(t, err, "client closed")
}
