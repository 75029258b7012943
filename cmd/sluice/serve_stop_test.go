package main

import (
	"context"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// startServe runs "sluice serve" at addr with args; stop interrupts it
// (the first signal) and returns its exit status and output.
func startServe(t *testing.T, addr string, args ...string) (stop func() (int, string, string)) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var out, errOut syncBuffer
	done := make(chan int, 1)
	go func() { done <- run(ctx, append([]string{"serve", "-addr", addr}, args...), &out, &errOut) }()
	require.Eventually(t, func() bool { return strings.Contains(out.String(), "listening on") }, 10*time.Second, time.Millisecond, errOut.String())
	return func() (int, string, string) {
		cancel()
		code := <-done
		return code, out.String(), errOut.String()
	}
}

// A drain that runs out of -stop-timeout exits with status 1 and says so;
// one that completes exits 0. On synctest's clock: the sleeper outlasts
// the timeout however slow the machine.
func TestServeExitStatusSaysWhetherTheDrainCompleted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		onPipeNetwork(t)
		stop := startServe(t, "127.0.0.1:7878", "-stop-timeout", "100ms")
		called := make(chan int, 1)
		go func() {
			code, _, _ := runCommand("call", "-addr", "127.0.0.1:7878", "-sleep", "10s")
			called <- code
		}()
		synctest.Wait() // the sleeper is in its handler
		code, out, errOut := stop()
		assert.Equal(t, exitFail, code)
		assert.Contains(t, errOut, "sluice serve: stop: -stop-timeout 100ms passed: context deadline exceeded", "names the flag")
		assert.Contains(t, out, "drain incomplete")
		assert.Equal(t, exitFail, <-called, "the sleeper was cut off")

		stop = startServe(t, "127.0.0.1:7879", "-stop-timeout", "100ms")
		code, out, errOut = stop()
		assert.Equal(t, exitOK, code, errOut)
		assert.NotContains(t, out, "drain incomplete")

		// Nothing in flight: even the shortest timeout is a complete
		// drain.
		stop = startServe(t, "127.0.0.1:7880", "-stop-timeout", "1ns")
		code, out, errOut = stop()
		assert.Equal(t, exitOK, code, errOut)
		assert.NotContains(t, out, "drain incomplete")
	})
}

// A second signal while the server drains closes it at once.
func TestServeSecondSignalClosesAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		onPipeNetwork(t)
		force := make(chan struct{})
		prev := forceStop
		forceStop = force
		defer func() { forceStop = prev }()
		stop := startServe(t, "127.0.0.1:7878", "-stop-timeout", "1h")
		called := make(chan int, 1)
		go func() {
			code, _, _ := runCommand("call", "-addr", "127.0.0.1:7878", "-sleep", "10s")
			called <- code
		}()
		synctest.Wait()
		start := time.Now()
		time.AfterFunc(time.Second, func() { close(force) })
		code, _, errOut := stop()
		assert.Equal(t, exitFail, code)
		assert.Contains(t, errOut, "interrupted again")
		assert.Equal(t, time.Second, time.Since(start), "closed at the second signal, not after the hour")
		assert.Equal(t, exitFail, <-called)
	})
}

// The real binary: SIGTERM stops "sluice serve" gracefully (exit 0 with
// nothing in flight), like SIGINT.
func TestServeBinaryStopsOnSIGTERM(t *testing.T) {
	bin := pluginBinary(t, "sluice", "github.com/sluicerpc/sluice/cmd/sluice")
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			var out, errOut syncBuffer
			cmd := exec.Command(bin, "serve", "-addr", freeAddr(t))
			cmd.Stdout, cmd.Stderr = &out, &errOut
			require.NoError(t, cmd.Start())
			require.Eventually(t, func() bool { return strings.Contains(out.String(), "listening on") }, 30*time.Second, time.Millisecond, errOut.String())
			require.NoError(t, cmd.Process.Signal(sig))
			require.NoError(t, cmd.Wait(), "stderr: %s", errOut.String())
			assert.Contains(t, out.String(), "sluice serve: stopped after 0 calls")
		})
	}
}
