package main

import (
	"bytes"
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/server/servertest"
)

// syncBuffer is a bytes.Buffer safe for the serve goroutine and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// freeAddr returns a loopback address nobody listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}

// serveInBackground runs "sluice serve" with args until the test ends and
// returns its address and output.
func serveInBackground(t *testing.T, args ...string) (string, *syncBuffer) {
	t.Helper()
	return serveAtInBackground(t, freeAddr(t), args...)
}

// serveAtInBackground is serveInBackground at addr.
func serveAtInBackground(t *testing.T, addr string, args ...string) (string, *syncBuffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var out, errOut syncBuffer
	done := make(chan int, 1)
	go func() { done <- run(ctx, append([]string{"serve", "-addr", addr}, args...), &out, &errOut) }()
	t.Cleanup(func() {
		cancel()
		assert.Equal(t, exitOK, <-done, "serve: %s", errOut.String())
	})
	require.Eventually(t, func() bool { return strings.Contains(out.String(), "listening on") }, 10*time.Second, time.Millisecond, errOut.String())
	return addr, &out
}

func TestServeAndCall(t *testing.T) {
	addr, out := serveInBackground(t, "-concurrency", "2")
	code, stdout, stderr := runCommand("call", "-addr", addr, "-data", "ping")
	assert.Equal(t, exitOK, code, stderr)
	assert.Equal(t, "ping\n", stdout)

	code, _, stderr = runCommand("call", "-addr", addr, "-method", "echo/Nope")
	assert.Equal(t, exitFail, code)
	assert.Contains(t, stderr, "Unimplemented")
	assert.Contains(t, out.String(), "admission=concurrency=2")
}

// TestServeAndCallCompressed: a large compressible body goes compressed
// with the profile both sides name, comes back intact, and the server's
// stop line counts the decode; a client offering none still talks to it.
func TestServeAndCallCompressed(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	addr := freeAddr(t)
	var out, errOut syncBuffer
	done := make(chan int, 1)
	go func() { done <- run(ctx, []string{"serve", "-addr", addr, "-codecs", "s2,zstd"}, &out, &errOut) }()
	require.Eventually(t, func() bool { return strings.Contains(out.String(), "listening on") }, 10*time.Second, time.Millisecond, errOut.String())
	assert.Contains(t, out.String(), "codecs=s2,zstd")
	data := strings.Repeat("sluice compresses this ", 400)
	code, stdout, stderr := runCommand("call", "-addr", addr, "-codecs", "zstd", "-data", data)
	assert.Equal(t, exitOK, code, stderr)
	assert.Equal(t, data+"\n", stdout)
	code, stdout, stderr = runCommand("call", "-addr", addr, "-codecs", "none", "-data", data)
	assert.Equal(t, exitOK, code, stderr)
	assert.Equal(t, data+"\n", stdout)
	cancel()
	require.Equal(t, exitOK, <-done, errOut.String())
	assert.Contains(t, out.String(), "sluice serve: decompressions=1 decoded-bytes=9200 decode-failures=0 compressed-responses=1 compressed-stream-messages=0\n")
}

// TestServeConcurrencyLimitWithSleepers: six concurrent calls of a second
// each against -concurrency 2: two run, four are refused. On synctest's
// clock (onPipeNetwork), so that the six calls all reach the server before
// the first sleeper wakes, however slow the machine; over loopback a caller
// late by a second found a free slot. The refusals make the command fail
// (exit status 1), and the throughput counts the two successes only.
func TestServeConcurrencyLimitWithSleepers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		onPipeNetwork(t)
		addr, _ := serveAtInBackground(t, "127.0.0.1:7878", "-concurrency", "2")
		code, stdout, stderr := runCommand("call", "-addr", addr, "-sleep", "1s", "-n", "6", "-c", "6")
		assert.Equal(t, exitFail, code, "four calls were refused: %s", stderr)
		assert.Contains(t, stdout, "calls: 6 in 1s: 2 succeeded (2/s), 4 refused, 0 canceled, 0 failed\n", "the global concurrency limit of 2 admits two sleepers at once")
		assert.Contains(t, stdout, "refused (concurrency): 4\n")
		assert.NotContains(t, stdout, "failed (")

		code, stdout, stderr = runCommand("call", "-addr", addr, "-sleep", "1s", "-n", "4", "-c", "2")
		assert.Equal(t, exitOK, code, "every call succeeded: %s", stderr)
		assert.Contains(t, stdout, "calls: 4 in 2s: 4 succeeded (2/s), 0 refused, 0 canceled, 0 failed\n")
	})
}

func TestServeAndCallOverTLS(t *testing.T) {
	dir := t.TempDir()
	ca, cert, key := writeTestCerts(t, dir)
	addr, out := serveInBackground(t, "-tls-cert", cert, "-tls-key", key)
	assert.Contains(t, out.String(), "tls=true")
	code, stdout, stderr := runCommand("call", "-addr", addr, "-tls-ca", ca, "-data", "secure")
	assert.Equal(t, exitOK, code, stderr)
	assert.Equal(t, "secure\n", stdout)

	code, _, stderr = runCommand("call", "-addr", addr, "-timeout", "2s")
	assert.Equal(t, exitFail, code, "plaintext against TLS fails")
	assert.NotEmpty(t, stderr)
}

func TestServeAndCallFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "-tls-cert", "x"}, "-tls-cert and -tls-key go together"},
		{[]string{"serve", "-client-ca", "x"}, "-client-ca needs -tls-cert and -tls-key"},
		{[]string{"serve", "-queue-calls", "3"}, "-queue-calls needs -concurrency or -rate"},
		{[]string{"serve", "extra"}, "unexpected arguments"},
		{[]string{"call", "-n", "0"}, "-n must be at least 1, got 0"},
		{[]string{"call", "-c", "-1"}, "-c must be at least 1, got -1"},
		{[]string{"call", "-timeout", "0s"}, "-timeout must be positive, got 0s"},
		{[]string{"call", "-sleep", "2h"}, "-sleep must be within 1ns..1m0s, got 2h0m0s"},
		{[]string{"call", "-sleep", "0s"}, "-sleep must be within 1ns..1m0s, got 0s"},
		{[]string{"call", "-sleep", "1s", "-method", "echo/Say"}, "-sleep calls echo/Sleep: it goes with neither -method nor -data"},
		{[]string{"call", "-sleep", "1s", "-data", "x"}, "-sleep calls echo/Sleep: it goes with neither -method nor -data"},
		{[]string{"call", "-addr", ""}, `-addr must list endpoints separated by commas, with none empty, got ""`},
		{[]string{"call", "-addr", "a:1,,b:2"}, `-addr must list endpoints separated by commas, with none empty, got "a:1,,b:2"`},
		{[]string{"call", "-method", "Say"}, `-method must be service/method, got "Say"`},
		{[]string{"call", "-method", "echo/"}, `-method must be service/method, got "echo/"`},
		{[]string{"call", "-server-name", "x"}, "-server-name needs -tls-ca"},
		{[]string{"call", "-tls-ca", "/nonexistent/ca.pem"}, "-tls-ca: open /nonexistent/ca.pem: no such file or directory"},
		{[]string{"call", "-tls-cert", "a", "-tls-key", "b"}, "-tls-cert needs -tls-ca"},
		{[]string{"call", "extra"}, "unexpected arguments"},
		{[]string{"call", "-codecs", "snappy"}, `-codecs: unknown codec "snappy"`},
		{[]string{"call", "-compress-min-size", "-3"}, "-compress-min-size must be -1 (never) or at least 0, got -3"},
		{[]string{"call", "-max-decoded-size", "0"}, "-max-decoded-size must be positive, got 0"},
	} {
		code, _, stderr := runCommand(tc.args...)
		assert.Equal(t, exitUsage, code, "%v", tc.args)
		assert.Contains(t, stderr, tc.want, "%v", tc.args)
	}
	addr := freeAddr(t)
	code, _, stderr := runCommand("call", "-addr", addr, "-timeout", "1s")
	assert.Equal(t, exitFail, code)
	assert.Contains(t, stderr, "sluice call: -addr "+addr+": ", "the error names the flag")
	assert.Contains(t, stderr, "connecting to")
}

// writeTestCerts writes a CA, and a server certificate and key for
// 127.0.0.1 signed by it, as PEM files in dir.
func writeTestCerts(t *testing.T, dir string) (ca, cert, key string) {
	pki := servertest.NewPKI(t, "sluice-test-ca")
	return pki.WritePEM(t, dir, pki.Issue(t, "sluice-test-server"))
}
