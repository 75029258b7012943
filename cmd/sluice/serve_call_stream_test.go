package main

import (
	"strings"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
)

// TestServeAndCallEachStreamKind: each stream kind of "sluice call"
// against the streaming echo methods of "sluice serve", over TCP
// loopback: every message received is printed in order, then the stream's
// status with the message counts, then its headers and trailers.
func TestServeAndCallEachStreamKind(t *testing.T) {
	addr, _ := serveInBackground(t)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"server", []string{"-stream", "server", "-method", "echo/Repeat", "-data", "3 hi"},
			"hi\nhi\nhi\nstream (1 sent, 3 received): OK\ntrailer echo-messages: \"3\"\n"},
		{"server, nothing back", []string{"-stream", "server", "-method", "echo/Repeat", "-data", "0"},
			// End is the server's first frame: its metadata is the headers and the trailers
			"stream (1 sent, 0 received): OK\nheader echo-messages: \"0\"\ntrailer echo-messages: \"0\"\n"},
		{"server, empty copies", []string{"-stream", "server", "-method", "echo/Repeat", "-data", "2"},
			"\n\nstream (1 sent, 2 received): OK\ntrailer echo-messages: \"2\"\n"},
		{"client", []string{"-stream", "client", "-method", "echo/Collect", "-data", "a", "-data", "b", "-count", "2"},
			"abab\nstream (4 sent, 1 received): OK\nheader echo-messages: \"4\"\n"},
		{"client, one message", []string{"-stream", "client", "-method", "echo/Collect"},
			"hello\nstream (1 sent, 1 received): OK\nheader echo-messages: \"1\"\n"},
		{"bidi", []string{"-stream", "bidi", "-method", "echo/Chat", "-data", "a", "-data", "b", "-count", "2"},
			"a\nb\na\nb\nstream (4 sent, 4 received): OK\ntrailer echo-messages: \"4\"\n"},
		{"bidi, the messages sent compressed", []string{"-stream", "bidi", "-method", "echo/Chat", "-data", strings.Repeat("squeeze ", 1000), "-codecs", "zstd", "-count", "3"},
			strings.Repeat(strings.Repeat("squeeze ", 1000)+"\n", 3) + "stream (3 sent, 3 received): OK\ntrailer echo-messages: \"3\"\n"},
	} {
		code, stdout, stderr := runCommand(append([]string{"call", "-addr", addr}, tc.args...)...)
		assert.Equal(t, exitOK, code, "%s: %s", tc.name, stderr)
		assert.Equal(t, tc.want, stdout, tc.name)
		assert.Empty(t, stderr, tc.name)
	}
}

// TestServeEchoStreamBounds: echo/Repeat accepts a count of 0..1000 and a
// body of at most 64 KiB, and refuses anything else with InvalidArgument;
// echo/Collect keeps at most 1 MiB and refuses the message that passes it
// with ResourceExhausted. A refused stream is exit status 1, its status on
// stderr.
func TestServeEchoStreamBounds(t *testing.T) {
	addr, _ := serveInBackground(t)
	call := func(args ...string) (int, string, string) {
		return runCommand(append([]string{"call", "-addr", addr}, args...)...)
	}

	code, stdout, stderr := call("-stream", "server", "-method", "echo/Repeat", "-data", "1000 x")
	assert.Equal(t, exitOK, code, stderr)
	assert.Equal(t, strings.Repeat("x\n", 1000)+"stream (1 sent, 1000 received): OK\ntrailer echo-messages: \"1000\"\n", stdout)
	body := strings.Repeat("b", maxRepeatBody)
	code, stdout, stderr = call("-stream", "server", "-method", "echo/Repeat", "-data", "1 "+body)
	assert.Equal(t, exitOK, code, stderr)
	assert.Equal(t, body+"\nstream (1 sent, 1 received): OK\ntrailer echo-messages: \"1\"\n", stdout)

	for _, tc := range []struct{ data, want string }{
		{"1001 x", "echo/Repeat sends at most 1000 copies, got a count of 1001"},
		{"9999", "echo/Repeat sends at most 1000 copies, got a count of 9999"},
		{"1 " + body + "b", "echo/Repeat repeats at most 65536 bytes, got 65537"},
		{"", `echo/Repeat wants a count of 0..1000, then a space and the body ("3 hi"), got ""`},
		{"x", `got "x"`},
		{"-1 x", `got "-1 x"`},
		{"+3 x", `got "+3 x"`},
		{"3x", `got "3x"`},
		{"00003 x", `got "00003 x"`},
		{" 3 x", `got " 3 x"`},
	} {
		code, stdout, stderr := call("-stream", "server", "-method", "echo/Repeat", "-data", tc.data)
		assert.Equal(t, exitFail, code, "%.40q", tc.data)
		assert.Empty(t, stdout, "%.40q", tc.data)
		assert.True(t, strings.HasPrefix(stderr, "sluice call: stream (1 sent, 0 received): sluice: InvalidArgument: echo/Repeat "), "%.40q: %s", tc.data, stderr)
		assert.True(t, strings.HasSuffix(stderr, tc.want+"\n"), "%.40q: %s", tc.data, stderr)
	}

	all := strings.Repeat("c", maxCollect)
	code, stdout, stderr = call("-stream", "client", "-method", "echo/Collect", "-data", all)
	assert.Equal(t, exitOK, code, stderr)
	assert.Equal(t, all+"\nstream (1 sent, 1 received): OK\nheader echo-messages: \"1\"\n", stdout)
	sixteenth := strings.Repeat("c", maxCollect/16)
	code, stdout, stderr = call("-stream", "client", "-method", "echo/Collect", "-data", sixteenth, "-count", "16")
	assert.Equal(t, exitOK, code, stderr)
	assert.Equal(t, all+"\nstream (16 sent, 1 received): OK\nheader echo-messages: \"16\"\n", stdout)

	code, stdout, stderr = call("-stream", "client", "-method", "echo/Collect", "-data", all, "-data", "c")
	assert.Equal(t, exitFail, code)
	assert.Empty(t, stdout)
	assert.Contains(t, stderr, "sluice: ResourceExhausted: echo/Collect keeps at most 1048576 bytes: message 2 (1 bytes) would make 1048577\n")
	// Uncompressed: compressed, its declared 1 MiB + 1 would pass the
	// server's decode floor, refused before Collect sees it.
	code, stdout, stderr = call("-stream", "client", "-method", "echo/Collect", "-codecs", "none", "-data", all+"c")
	assert.Equal(t, exitFail, code)
	assert.Empty(t, stdout)
	assert.Contains(t, stderr, "sluice: ResourceExhausted: echo/Collect keeps at most 1048576 bytes: message 1 (1048577 bytes) would make 1048577\n")
}

// TestServeAndCallStreamShapeMismatch: a unary method called as a stream,
// or a stream method as a unary call, is Unimplemented; a server-streaming
// method opened without its message and half-close (as a client or bidi
// stream) is InvalidArgument. Exit status 1. (A client stream and a bidi
// stream open alike on the wire: each may call the other's method.)
func TestServeAndCallStreamShapeMismatch(t *testing.T) {
	addr, _ := serveInBackground(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-stream", "server", "-method", "echo/Say"}, "sluice call: stream (1 sent, 0 received): sluice: Unimplemented: echo/Say is a unary method, called as a stream\n"},
		{[]string{"-stream", "bidi", "-method", "echo/Repeat", "-data", "3 hi"}, "sluice: InvalidArgument: echo/Repeat is server-streaming: its Request carries the one message and the half-close (HasMessage, EndStream)\n"},
		{[]string{"-stream", "client", "-method", "echo/Repeat", "-data", "3 hi"}, "sluice: InvalidArgument: echo/Repeat is server-streaming"},
		{[]string{"-stream", "client", "-method", "echo/Sleep"}, "sluice: Unimplemented: echo/Sleep is a unary method, called as a stream\n"},
		{[]string{"-method", "echo/Chat"}, "sluice call: sluice: Unimplemented: echo/Chat is a bidirectional-streaming method, called as a unary call\n"},
		{[]string{"-method", "echo/Collect"}, "sluice call: sluice: Unimplemented: echo/Collect is a client-streaming method, called as a unary call\n"},
		{[]string{"-stream", "bidi", "-method", "echo/Nope"}, "Unimplemented"},
	} {
		code, stdout, stderr := runCommand(append([]string{"call", "-addr", addr}, tc.args...)...)
		assert.Equal(t, exitFail, code, "%v", tc.args)
		assert.Empty(t, stdout, "%v", tc.args)
		assert.Contains(t, stderr, tc.want, "%v", tc.args)
	}
	code, stdout, _ := runCommand("call", "-addr", addr, "-method", "echo/Repeat", "-n", "2")
	assert.Equal(t, exitFail, code)
	assert.Contains(t, stdout, "failed (Unimplemented): 2, the first: sluice: Unimplemented: echo/Repeat is a server-streaming method, called as a unary call\n")
}

// TestCallStreamSendFailureIsReported: a message the client refuses to
// send (larger than the server's maximum frame) ends the stream with that
// error, not with the Canceled of the stream it then closes.
func TestCallStreamSendFailureIsReported(t *testing.T) {
	addr, _ := serveInBackground(t, "-max-frame-size", "4096")
	code, stdout, stderr := runCommand("call", "-addr", addr, "-codecs", "none", "-stream", "bidi", "-method", "echo/Chat", "-data", strings.Repeat("x", 8192))
	assert.Equal(t, exitFail, code)
	assert.Empty(t, stdout)
	assert.Contains(t, stderr, "sluice call: stream (0 sent, 0 received): sluice: ResourceExhausted: the message (")
	assert.Contains(t, stderr, "exceeds the server's maximum frame size (4096 bytes)\n")
	assert.NotContains(t, stderr, "Canceled")
}

// TestCallStreamLoad: with -n above 1 each call is a whole stream, and the
// summary counts streams as it counts unary calls, plus their messages.
// On synctest's clock (onPipeNetwork), so the elapsed time is exact.
func TestCallStreamLoad(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		onPipeNetwork(t)
		addr, _ := serveAtInBackground(t, "127.0.0.1:7878")
		code, stdout, stderr := runCommand("call", "-addr", addr, "-stream", "bidi", "-method", "echo/Chat", "-data", "a", "-data", "b", "-count", "3", "-n", "4", "-c", "2")
		assert.Equal(t, exitOK, code, stderr)
		assert.Equal(t, "calls: 4 in 0s: 4 succeeded (0/s), 0 refused, 0 canceled, 0 failed\nstream messages: 24 sent, 24 received\n", firstLines(stdout, 2))

		code, stdout, stderr = runCommand("call", "-addr", addr, "-stream", "server", "-method", "echo/Repeat", "-data", "2 hi", "-n", "3")
		assert.Equal(t, exitOK, code, stderr)
		assert.Equal(t, "calls: 3 in 0s: 3 succeeded (0/s), 0 refused, 0 canceled, 0 failed\nstream messages: 3 sent, 6 received\n", firstLines(stdout, 2))

		code, stdout, _ = runCommand("call", "-addr", addr, "-stream", "server", "-method", "echo/Repeat", "-data", "many", "-n", "3")
		assert.Equal(t, exitFail, code, "every stream was refused")
		assert.Contains(t, stdout, "calls: 3 in 0s: 0 succeeded (0/s), 0 refused, 0 canceled, 3 failed\nstream messages: 3 sent, 0 received\n")
		assert.Contains(t, stdout, `failed (InvalidArgument): 3, the first: sluice: InvalidArgument: echo/Repeat wants a count of 0..1000, then a space and the body ("3 hi"), got "many"`+"\n")
	})
}

func firstLines(s string, n int) string {
	lines := strings.SplitAfter(s, "\n")
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "")
}

// TestCallStreamFlagErrors: a stream kind that does not exist, a stream
// with a flag of unary calls, and several messages or -count without a
// stream that sends several are a bad command line (exit status 2),
// checked before anything is dialled.
func TestCallStreamFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-stream", "duplex"}, `-stream must be none, server, client or bidi, got "duplex"`},
		{[]string{"-stream", ""}, `-stream must be none, server, client or bidi, got ""`},
		{[]string{"-stream", "bidi", "-one-way"}, "-stream bidi opens a stream: it does not go with -one-way"},
		{[]string{"-stream", "server", "-sleep", "1s"}, "-stream server opens a stream: it does not go with -sleep (echo/Sleep is unary)"},
		{[]string{"-stream", "client", "-count", "0"}, "-count must be at least 1, got 0"},
		{[]string{"-count", "2"}, "-count sends the -data messages several times: it needs -stream client or bidi"},
		{[]string{"-stream", "server", "-count", "2"}, "-count sends the -data messages several times: it needs -stream client or bidi"},
		{[]string{"-stream", "none", "-count", "1"}, "-count sends the -data messages several times: it needs -stream client or bidi"},
		{[]string{"-data", "a", "-data", "b"}, "-data given 2 times: only -stream client or bidi sends several messages"},
		{[]string{"-stream", "server", "-data", "1 a", "-data", "1 b"}, "-data given 2 times: only -stream client or bidi sends several messages"},
	} {
		// -addr names nothing that listens: a command that passed the
		// flag checks would fail to dial, with exit status 1.
		code, stdout, stderr := runCommand(append([]string{"call", "-addr", "127.0.0.1:1", "-timeout", "1s"}, tc.args...)...)
		assert.Equal(t, exitUsage, code, "%v", tc.args)
		assert.Empty(t, stdout, "%v", tc.args)
		assert.Contains(t, stderr, "sluice call: "+tc.want+"\n", "%v", tc.args)
	}
	// Together, one line each.
	code, _, stderr := runCommand("call", "-stream", "server", "-one-way", "-count", "3")
	assert.Equal(t, exitUsage, code)
	assert.Equal(t, "sluice call: -stream server opens a stream: it does not go with -one-way\n"+
		"sluice call: -count sends the -data messages several times: it needs -stream client or bidi\n", stderr)
}
