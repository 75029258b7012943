package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rateOneDoc admits one call an hour: the second call is refused however
// slow the machine.
const rateOneDoc = `version: 1
server:
  admission:
    global:
      limits: [{kind: token_bucket, token_limit: 1, tokens_per_period: 1, period: 1h}]
`

// concurrencyDoc admits calls while fewer than 5 run.
const concurrencyDoc = `version: 1
server:
  admission:
    global:
      limits: [{kind: concurrency, limit: 5}]
`

// saveConfig writes data at path as an editor saves (a new file renamed
// over the old one).
func saveConfig(t *testing.T, path, data string) {
	t.Helper()
	tmp := path + ".tmp"
	require.NoError(t, os.WriteFile(tmp, []byte(data), 0o644))
	require.NoError(t, os.Rename(tmp, path))
}

// serveWithConfig serves with -config path; its stderr is returned too,
// where the configuration's log lines go.
func serveWithConfig(t *testing.T, path string) (addr string, stdout, stderr *syncBuffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var out, errOut syncBuffer
	addr = freeAddr(t)
	done := make(chan int, 1)
	go func() { done <- run(ctx, []string{"serve", "-addr", addr, "-config", path}, &out, &errOut) }()
	t.Cleanup(func() {
		cancel()
		assert.Equal(t, exitOK, <-done, "serve: %s", errOut.String())
	})
	require.Eventually(t, func() bool { return strings.Contains(out.String(), "listening on") }, 10*time.Second, time.Millisecond, errOut.String())
	return addr, &out, &errOut
}

// fakeHangups replaces the SIGHUPs of serve with a channel of the test's
// until it ends, and checks that serve stopped listening to what it
// started listening to.
func fakeHangups(t *testing.T) chan<- os.Signal {
	t.Helper()
	c := make(chan os.Signal, 1)
	saved := hangups
	var mu sync.Mutex
	started, stopped := 0, 0
	hangups = func() (<-chan os.Signal, func()) {
		mu.Lock()
		defer mu.Unlock()
		started++
		return c, func() { mu.Lock(); defer mu.Unlock(); stopped++ }
	}
	t.Cleanup(func() {
		hangups = saved
		mu.Lock()
		defer mu.Unlock()
		assert.Equal(t, started, stopped, "serve stopped listening for SIGHUP as often as it started")
	})
	return c
}

// serve -config applies the file before it listens, and every change of
// it afterwards.
func TestServeConfigFileHotReload(t *testing.T) {
	fakeHangups(t)
	path := filepath.Join(t.TempDir(), "sluice.yaml")
	saveConfig(t, path, rateOneDoc)
	addr, out, errOut := serveWithConfig(t, path)
	assert.Contains(t, out.String(), "admission=file, generation 1)")

	code, _, stderr := runCommand("call", "-addr", addr, "-data", "one")
	require.Equal(t, exitOK, code, stderr)
	code, stdout, stderr := runCommand("call", "-addr", addr, "-data", "two")
	require.Equal(t, exitFail, code, "the file's token bucket holds one call: %s %s", stdout, stderr)
	assert.Contains(t, stdout+stderr, "rate")

	saveConfig(t, path, concurrencyDoc)
	require.Eventually(t, func() bool {
		return strings.Contains(errOut.String(), `msg="configuration applied" source=file origin=`+path+` generation=2`)
	}, 10*time.Second, time.Millisecond, errOut.String())
	code, stdout, stderr = runCommand("call", "-addr", addr, "-data", "three")
	assert.Equal(t, exitOK, code, "the new file has no rate limit: %s", stderr)
	assert.Equal(t, "three\n", stdout)

	// An invalid change keeps the configuration and says why, with the
	// line.
	saveConfig(t, path, "version: 1\nserver:\n  admission: {global: {limits: [{kind: concurrency, limit: -1}]}}\n")
	require.Eventually(t, func() bool {
		return strings.Contains(errOut.String(), "configuration rejected")
	}, 10*time.Second, time.Millisecond, errOut.String())
	assert.Contains(t, errOut.String(), path+":3:")
	code, _, stderr = runCommand("call", "-addr", addr, "-data", "four")
	assert.Equal(t, exitOK, code, "the configuration in force is kept: %s", stderr)
}

// SIGHUP reads the file again: nothing changed, so the Controller finds
// it unchanged.
func TestServeConfigFileSIGHUP(t *testing.T) {
	hup := fakeHangups(t)
	path := filepath.Join(t.TempDir(), "sluice.yaml")
	saveConfig(t, path, concurrencyDoc)
	_, _, errOut := serveWithConfig(t, path)
	hup <- syscall.SIGHUP
	require.Eventually(t, func() bool {
		return strings.Contains(errOut.String(), `msg="configuration unchanged" source=file origin=`+path+` generation=1`)
	}, 10*time.Second, time.Millisecond, errOut.String())
	assert.Contains(t, errOut.String(), `msg="SIGHUP: reading the configuration file again" path=`+path)
}

// An invalid, missing or too large file at the start: serve does not
// start, and says why (the problem's line for an invalid one).
func TestServeConfigFileInvalidAtStart(t *testing.T) {
	fakeHangups(t)
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	require.NoError(t, os.WriteFile(bad, []byte("version: 1\nserver:\n  calls: {per_conection: 3}\n"), 0o644))
	code, stdout, stderr := runCommand("serve", "-addr", freeAddr(t), "-config", bad)
	assert.Equal(t, exitFail, code)
	assert.Contains(t, stderr, "sluice serve: -config: config: "+bad+":3:", "the flag is named")
	assert.Contains(t, stderr, "per_conection")
	assert.NotContains(t, stdout, "listening on")

	code, _, stderr = runCommand("serve", "-addr", freeAddr(t), "-config", filepath.Join(dir, "nope.yaml"))
	assert.Equal(t, exitFail, code)
	assert.Contains(t, stderr, "sluice serve: -config: ")
	assert.Contains(t, stderr, filepath.Join(dir, "nope.yaml")+": no such file or directory")
}

// With -config the document is the only source of what it holds: flags
// that set the same are usage errors, each named.
func TestServeConfigConflictingFlags(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sluice.yaml")
	require.NoError(t, os.WriteFile(path, []byte(concurrencyDoc), 0o644))
	code, _, stderr := runCommand("serve", "-config", path, "-concurrency", "2", "-calls-per-conn", "3")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, "sluice serve: -concurrency: with -config the configuration document sets it (docs/operations.md)\n")
	assert.Contains(t, stderr, "sluice serve: -calls-per-conn: with -config the configuration document sets it (docs/operations.md)\n")
}
