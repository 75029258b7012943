package main

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every flag of "sluice serve" is checked before anything starts: a value
// that means nothing is an error that names the flag (never a Go field or
// an internal package), with exit status 2 like a flag the parser refused.
func TestServeFlagErrorsNameTheFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-addr", ""}, "-addr must not be empty"},
		{[]string{"-max-conns", "0"}, "-max-conns must be positive, got 0"},
		{[]string{"-max-conns", "-5"}, "-max-conns must be positive, got -5"},
		{[]string{"-max-conns", "2147483648"}, "-max-conns must be at most 2147483647, got 2147483648"},
		{[]string{"-max-handshakes", "0"}, "-max-handshakes must be positive, got 0"},
		{[]string{"-max-handshakes", "-1"}, "-max-handshakes must be positive, got -1"},
		{[]string{"-max-conns", "10", "-max-handshakes", "11"}, "-max-handshakes (11) must not exceed -max-conns (10)"},
		{[]string{"-max-handshakes", "2000"}, "-max-handshakes (2000) must not exceed -max-conns (1024)"},
		{[]string{"-handshake-timeout", "0s"}, "-handshake-timeout must be positive, got 0s"},
		{[]string{"-handshake-timeout", "-1s"}, "-handshake-timeout must be positive, got -1s"},
		{[]string{"-keepalive", "-1s"}, "-keepalive must not be negative (0 turns keepalive off), got -1s"},
		{[]string{"-idle-timeout", "-1m"}, "-idle-timeout must not be negative (0 never closes idle connections), got -1m0s"},
		{[]string{"-max-frame-size", "4095"}, "-max-frame-size must be between 4096 and 4294967295 (bytes), got 4095"},
		{[]string{"-max-frame-size", "0"}, "-max-frame-size must be between 4096 and 4294967295 (bytes), got 0"},
		{[]string{"-max-frame-size", "4294967296"}, "-max-frame-size must be between 4096 and 4294967295 (bytes), got 4294967296"},
		{[]string{"-calls-per-conn", "0"}, "-calls-per-conn must be positive, got 0"},
		{[]string{"-calls-per-conn", "-1"}, "-calls-per-conn must be positive, got -1"},
		{[]string{"-calls-per-conn", "2097152"}, "-calls-per-conn must be at most 2097151, got 2097152"},
		{[]string{"-calls-per-server", "0"}, "-calls-per-server must be positive, got 0"},
		{[]string{"-calls-per-server", "2097152"}, "-calls-per-server must be at most 2097151, got 2097152"},
		{[]string{"-max-handshakes-per-address", "0"}, "-max-handshakes-per-address must be positive, got 0"},
		{[]string{"-max-handshakes-per-address", "65"}, "-max-handshakes-per-address (65) must not exceed -max-handshakes (64)"},
		{[]string{"-max-conns", "5", "-max-handshakes-per-address", "6"}, "-max-handshakes-per-address (6) must not exceed -max-handshakes (5)"},
		{[]string{"-max-handshakes", "4", "-max-handshakes-per-address", "5"}, "-max-handshakes-per-address (5) must not exceed -max-handshakes (4)"},
		{[]string{"-write-timeout", "-1s"}, "-write-timeout must not be negative (0 turns it off), got -1s"},
		{[]string{"-stream-stall-timeout", "-1s"}, "-stream-stall-timeout must not be negative (0 turns it off), got -1s"},
		{[]string{"-max-frame-memory", "4096"}, "-max-frame-memory (4096) must be at least -max-frame-size (4194304)"},
		{[]string{"-max-frame-size", "8388608", "-max-frame-memory", "5000000"}, "-max-frame-memory (5000000) must be at least -max-frame-size (8388608)"},
		{[]string{"-concurrency", "-2"}, "-concurrency must not be negative (0: no limit), got -2"},
		{[]string{"-concurrency", "2147483648"}, "-concurrency must be at most 2147483647, got 2147483648"},
		{[]string{"-rate", "-1"}, "-rate must not be negative (0: no limit), got -1"},
		{[]string{"-rate", "2147483648"}, "-rate must be at most 2147483647, got 2147483648"},
		{[]string{"-concurrency", "2", "-queue-calls", "-1"}, "-queue-calls must not be negative (0: none wait), got -1"},
		{[]string{"-concurrency", "2", "-queue-calls", "4", "-queue-delay", "0s"}, "-queue-delay must be positive, got 0s"},
		{[]string{"-queue-delay", "1s"}, "-queue-delay needs -queue-calls"},
		{[]string{"-stop-timeout", "0s"}, "-stop-timeout must be positive, got 0s"},
		{[]string{"-tls-cert", "/nonexistent/cert.pem", "-tls-key", "/nonexistent/key.pem"}, "-tls-cert /nonexistent/cert.pem, -tls-key /nonexistent/key.pem: open /nonexistent/cert.pem: no such file or directory"},
	} {
		t.Run(strings.Join(tc.args, "_"), func(t *testing.T) {
			code, stdout, stderr := serveBriefly(t, tc.args...)
			assert.Equal(t, exitUsage, code)
			assert.Equal(t, "sluice serve: "+tc.want, firstLine(stderr))
			assert.Empty(t, stdout, "the server never started")
			for _, internal := range []string{"Options", "conngate", "server:", "kernel:", "Limits."} {
				assert.NotContains(t, stderr, internal)
			}
		})
	}
	// Every problem is reported, each on its own line.
	code, _, stderr := serveBriefly(t, "-max-conns", "0", "-keepalive", "-1s", "-stop-timeout", "0s")
	assert.Equal(t, exitUsage, code)
	assert.Equal(t, "sluice serve: -max-conns must be positive, got 0\n"+
		"sluice serve: -stop-timeout must be positive, got 0s\n"+
		"sluice serve: -keepalive must not be negative (0 turns keepalive off), got -1s\n", stderr)
}

// serveBriefly runs "sluice serve" with args on the pipe network, in a
// synctest bubble, interrupted after a minute of the bubble's clock if it
// started (an instant when nothing happens): a command line that should
// have been refused fails the test instead of hanging it.
func serveBriefly(t *testing.T, args ...string) (code int, stdout, stderr string) {
	synctest.Test(t, func(t *testing.T) {
		onPipeNetwork(t)
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		var out, errOut bytes.Buffer
		code = run(ctx, append([]string{"serve"}, args...), &out, &errOut)
		stdout, stderr = out.String(), errOut.String()
	})
	return code, stdout, stderr
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// "-max-conns 10" alone works: the handshake bound is then 10, not the
// default 64 that would exceed it; above 64 connections it stays 64, and
// -max-handshakes sets it.
func TestServeMaxConnsAlone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		onPipeNetwork(t)
		for i, tc := range []struct {
			args []string
			want string
		}{
			{[]string{"-max-conns", "10"}, "max-conns=10 max-handshakes=10 "},
			{[]string{"-max-conns", "100"}, "max-conns=100 max-handshakes=64 "},
			{[]string{"-max-conns", "10", "-max-handshakes", "3"}, "max-conns=10 max-handshakes=3 "},
			{[]string{"-max-conns", "10", "-max-handshakes-per-address", "3"}, "max-conns=10 max-handshakes=10 max-handshakes-per-address=3 "},
			{nil, "max-conns=1024 max-handshakes=64 max-handshakes-per-address=8 handshake-timeout=10s keepalive=30s idle-timeout=5m0s write-timeout=20s max-frame-size=4194304 max-frame-memory=268435456 calls-per-conn=256 calls-per-server=4096\n"},
		} {
			addr := "serve-" + string(rune('a'+i))
			stop := startServe(t, addr, tc.args...)
			code, stdout, stderr := runCommand("call", "-addr", addr, "-data", "hi")
			assert.Equal(t, exitOK, code, stderr)
			assert.Equal(t, "hi\n", stdout)
			code, out, errOut := stop()
			assert.Equal(t, exitOK, code, errOut)
			assert.Contains(t, out, tc.want, "%v", tc.args)
		}
	})
}

// -max-frame-size is the largest payload the server accepts, announced in
// the handshake: a client refuses to send a larger request (uncompressed:
// compressed, the 5000 bytes of x fit).
func TestServeMaxFrameSize(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		onPipeNetwork(t)
		big := strings.Repeat("x", 5000)
		stop := startServe(t, "small", "-max-frame-size", "4096")
		code, stdout, stderr := runCommand("call", "-addr", "small", "-data", "fits")
		assert.Equal(t, exitOK, code, stderr)
		assert.Equal(t, "fits\n", stdout)
		code, _, stderr = runCommand("call", "-addr", "small", "-codecs", "none", "-data", big)
		assert.Equal(t, exitFail, code)
		assert.Contains(t, stderr, "exceeds the server's maximum frame size (4096 bytes)")
		code, stdout, stderr = runCommand("call", "-addr", "small", "-data", big)
		assert.Equal(t, exitOK, code, stderr)
		assert.Equal(t, big+"\n", stdout, "compressed, it fits")
		code, out, errOut := stop()
		assert.Equal(t, exitOK, code, errOut)
		assert.Contains(t, out, "max-frame-size=4096 ")

		stop = startServe(t, "default")
		code, stdout, stderr = runCommand("call", "-addr", "default", "-data", big)
		assert.Equal(t, exitOK, code, stderr)
		assert.Equal(t, big+"\n", stdout)
		code, _, errOut = stop()
		assert.Equal(t, exitOK, code, errOut)
	})
}

// -handshake-timeout closes a connection that never sends its handshake
// when the timeout passes (on synctest's clock: exactly then).
func TestServeHandshakeTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		onPipeNetwork(t)
		for _, tc := range []struct {
			args []string
			want time.Duration
		}{
			{[]string{"-handshake-timeout", "2s"}, 2 * time.Second},
			{nil, 10 * time.Second},
		} {
			stop := startServe(t, "hs", tc.args...)
			conn, err := dialer(t.Context(), "hs")
			require.NoError(t, err)
			start := time.Now()
			_, err = io.ReadAll(conn) // the server sends nothing and closes
			require.NoError(t, err)
			assert.Equal(t, tc.want, time.Since(start), "%v", tc.args)
			require.NoError(t, conn.Close())
			code, _, errOut := stop()
			assert.Equal(t, exitOK, code, errOut)
		}
	})
}

// The keepalive and idle flags' 0 means off, which server.Options spells
// as a negative value (its 0 selects the default); every other value is
// passed as given.
func TestServeOptionsMapping(t *testing.T) {
	o := serveOptions{MaxConns: 10, MaxFrameSize: 8192, MaxFrameMemory: 1 << 20, HandshakeTimeout: 3 * time.Second, CallsPerConn: 5, CallsPerServer: 50}
	so := o.serverOptions()
	assert.Zero(t, so.Connections.MaxHandshakesPerAddress, "without -max-handshakes-per-address the server's default")
	assert.Negative(t, so.WriteTimeout, "-write-timeout 0: off")
	assert.Negative(t, so.StreamStallTimeout, "-stream-stall-timeout 0: off")
	assert.EqualValues(t, 1<<20, so.MaxFrameMemory)
	assert.Equal(t, 10, so.Connections.MaxConnections)
	assert.Zero(t, so.Connections.MaxHandshakes, "without -max-handshakes the server's default, at most MaxConnections")
	assert.Equal(t, 3*time.Second, so.HandshakeTimeout)
	assert.Negative(t, so.KeepaliveInterval, "-keepalive 0: off")
	assert.Negative(t, so.IdleTimeout, "-idle-timeout 0: never")
	require.NotNil(t, so.Limits)
	assert.Equal(t, uint32(8192), so.Limits.MaxFrameSize)
	assert.NoError(t, so.Limits.Validate())
	assert.Equal(t, 5, so.Calls.PerConnection)
	assert.Equal(t, 50, so.Calls.PerServer)

	o.Keepalive, o.IdleTimeout, o.MaxHandshakes, o.MaxHandshakesPerAddress, o.WriteTimeout = 45*time.Second, time.Hour, 4, 2, time.Minute
	o.set = map[string]bool{"max-handshakes": true, "max-handshakes-per-address": true}
	so = o.serverOptions()
	assert.Equal(t, 2, so.Connections.MaxHandshakesPerAddress)
	assert.Equal(t, time.Minute, so.WriteTimeout)

	// Without -max-frame-memory, a -max-frame-size above its default
	// raises it (the server needs room for one frame); given, it is kept.
	big := serveOptions{MaxFrameSize: 1 << 30, MaxFrameMemory: 256 << 20}
	assert.EqualValues(t, 1<<30, big.serverOptions().MaxFrameMemory)
	big.set = map[string]bool{"max-frame-memory": true}
	big.MaxFrameMemory = 2 << 30
	assert.EqualValues(t, 2<<30, big.serverOptions().MaxFrameMemory)
	assert.Equal(t, 45*time.Second, so.KeepaliveInterval)
	assert.Equal(t, time.Hour, so.IdleTimeout)
	assert.Equal(t, 4, so.Connections.MaxHandshakes)
}
