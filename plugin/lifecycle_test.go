//go:build linux

package plugin_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/plugin"
	"github.com/sluicerpc/sluice/plugin/internal/testkind"
	"github.com/sluicerpc/sluice/spi"
)

// processGone reports that pid no longer runs: it does not exist, or it is
// a zombie nobody reaped (the container's pid 1 might not reap).
func processGone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return os.IsNotExist(err)
	}
	// pid (comm) state ...; comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(stat, ')')
	return i >= 0 && i+2 < len(stat) && (stat[i+2] == 'Z' || stat[i+2] == 'X')
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still waiting after %v for %s", waitLimit, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestCloseKillsPlugin(t *testing.T) {
	k, err := plugin.LoadLimiterKind(pluginPath, plugin.WithLogger(quietLogger()))
	require.NoError(t, err)
	pid := k.Pid()
	require.NotZero(t, pid)
	require.False(t, processGone(pid))
	require.NoError(t, k.Close())
	require.NoError(t, k.Close(), "Close is idempotent")
	waitFor(t, "the plugin to exit after Close", func() bool { return processGone(pid) })

	err = k.Validate(testkind.Params(1))
	require.ErrorIs(t, err, plugin.ErrPluginUnavailable)
}

func TestCrashedPluginFailsCallsClearly(t *testing.T) {
	k, err := plugin.LoadLimiterKind(pluginPath, plugin.WithLogger(quietLogger()))
	require.NoError(t, err)
	defer func() { _ = k.Close() }()
	now := time.Unix(1000, 0)
	l, err := k.New(testkind.Params(3), now)
	require.NoError(t, err)
	require.True(t, l.TryAcquire(now, 1).Granted)

	pid := k.Pid()
	require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
	waitFor(t, "the killed plugin to exit", func() bool { return processGone(pid) })

	assert.Equal(t, spi.RefuseNever(), l.TryAcquire(now, 1), "a failing plugin refuses with RefuseNever")
	lerr := l.(*plugin.Limiter).Err()
	require.ErrorIs(t, lerr, plugin.ErrPluginUnavailable)
	assert.Contains(t, lerr.Error(), testkind.Name)
	assert.Contains(t, lerr.Error(), "try-acquire")
	assert.ErrorIs(t, k.Err(), plugin.ErrPluginUnavailable)

	l.Release(now, 1)
	l.Cancel(now, 1)
	assert.Equal(t, spi.Snapshot{Kind: testkind.Name}, l.Snapshot(now))
	assert.ErrorIs(t, l.Reconfigure(now, testkind.Params(4)), plugin.ErrPluginUnavailable)
	assert.ErrorIs(t, k.Validate(testkind.Params(4)), plugin.ErrPluginUnavailable)
	_, err = k.New(testkind.Params(4), now)
	assert.ErrorIs(t, err, plugin.ErrPluginUnavailable)
	assert.GreaterOrEqual(t, k.Failures(), uint64(7))
}

// TestPluginExitsWhenHostDies starts a host process (this test binary in
// helper mode) that loads the plugin, kills the host with SIGKILL, and
// waits for the orphaned plugin to exit by itself.
func TestPluginExitsWhenHostDies(t *testing.T) {
	host := exec.Command(os.Args[0], "-test.run=^$")
	host.Env = append(os.Environ(), helperHostEnv+"=1", "SLUICE_PLUGIN_TEST_PLUGIN="+pluginPath)
	out, err := host.StdoutPipe()
	require.NoError(t, err)
	host.Stderr = os.Stderr
	require.NoError(t, host.Start())
	hostDone := false
	defer func() {
		if !hostDone {
			_ = host.Process.Kill()
			_ = host.Wait()
		}
	}()

	lines := make(chan string, 1)
	go func() {
		s := bufio.NewScanner(out)
		for s.Scan() {
			if strings.HasPrefix(s.Text(), "plugin-pid ") {
				lines <- s.Text()
				break
			}
		}
		close(lines)
		_, _ = bufio.NewReader(out).WriteTo(new(bytes.Buffer)) // drain until EOF
	}()
	var line string
	select {
	case line = <-lines:
	case <-time.After(waitLimit):
		t.Fatal("the helper host did not report its plugin's pid")
	}
	require.NotEmpty(t, line, "the helper host exited before loading the plugin")
	pid, err := strconv.Atoi(strings.TrimPrefix(line, "plugin-pid "))
	require.NoError(t, err)
	require.False(t, processGone(pid), "the plugin runs while its host does")

	require.NoError(t, host.Process.Signal(syscall.SIGKILL))
	_ = host.Wait()
	hostDone = true
	waitFor(t, "the orphaned plugin to exit", func() bool { return processGone(pid) })
}
