package server_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/server"
)

// manualClock is a spi.Clock that moves only when told.
type manualClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *manualClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// recordedLine is one log record: its level, message and attributes.
type recordedLine struct {
	level slog.Level
	msg   string
	attrs map[string]any
}

// recordingHandler is a slog.Handler that keeps every record.
type recordingHandler struct {
	mu    sync.Mutex
	lines []recordedLine
}

func (h *recordingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *recordingHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *recordingHandler) WithGroup(string) slog.Handler            { return h }
func (h *recordingHandler) Handle(_ context.Context, r slog.Record) error {
	l := recordedLine{level: r.Level, msg: r.Message, attrs: map[string]any{}}
	r.Attrs(func(a slog.Attr) bool {
		l.attrs[a.Key] = a.Value.Any()
		return true
	})
	h.mu.Lock()
	h.lines = append(h.lines, l)
	h.mu.Unlock()
	return nil
}

// refusals returns the refusal lines logged so far.
func (h *recordingHandler) refusals() []recordedLine {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []recordedLine
	for _, l := range h.lines {
		if strings.HasPrefix(l.msg, "server: connections refused at accept") {
			out = append(out, l)
		}
	}
	return out
}

// TestRefusalLogIsRateLimitedPerReason: connections refused at accept are
// logged at Warn, at most one line per reason per 10 s of the server's
// clock, each saying how many were refused since the previous line. The
// clock is a manual one; the accept loop is known to be done with earlier
// refusals once it has served a later connection (settle).
func TestRefusalLogIsRateLimitedPerReason(t *testing.T) {
	clock := &manualClock{now: time.Unix(1_000_000, 0)}
	logs := &recordingHandler{}
	s := startServer(t, server.Options{
		Connections:      server.ConnectionLimits{MaxConnections: 100, MaxHandshakes: 2, MaxHandshakesPerAddress: 1},
		HandshakeTimeout: time.Hour,
		Clock:            clock,
		Logger:           slog.New(logs),
	})
	settle := func() { t.Helper(); callFrom(t, 9, s.addr, nil) }
	refuseFrom := func(host byte) {
		t.Helper()
		requireRefusedAtAccept(t, newRawClient(t, dialFrom(t, host, s.addr)), "the server is at its limit of connections in handshake")
	}

	newRawClient(t, dialFrom(t, 2, s.addr)) // holds 127.0.0.2's handshake
	for range 3 {
		refuseFrom(2)
	}
	settle()
	lines := logs.refusals()
	require.Len(t, lines, 1, "the first refusal is logged at once, the next two only counted")
	assert.Equal(t, slog.LevelWarn, lines[0].level)
	assert.Equal(t, "server: connections refused at accept: the MaxHandshakesPerAddress bound was reached", lines[0].msg)
	assert.Equal(t, "handshake_per_address", lines[0].attrs["reason"])
	assert.Equal(t, int64(1), lines[0].attrs["refused"])
	assert.Equal(t, "since the server started", lines[0].attrs["counted"])
	assert.Equal(t, int64(1), lines[0].attrs["bound"])
	assert.Contains(t, lines[0].attrs["last_remote"], "127.0.0.2:")

	clock.advance(10*time.Second - time.Nanosecond)
	refuseFrom(2)
	settle()
	require.Len(t, logs.refusals(), 1, "a line before the interval passed")

	clock.advance(time.Nanosecond)
	refuseFrom(2)
	settle()
	lines = logs.refusals()
	require.Len(t, lines, 2)
	assert.Equal(t, "handshake_per_address", lines[1].attrs["reason"])
	assert.Equal(t, int64(4), lines[1].attrs["refused"], "the two counted, the one before the interval passed, this one")
	assert.Equal(t, "since the previous line", lines[1].attrs["counted"])

	// Another reason has its own interval: logged at once.
	held := newRawClient(t, dialFrom(t, 3, s.addr)) // the second handshake slot
	refuseFrom(4)
	held.handshake(nil) // frees the slot for settle
	settle()
	lines = logs.refusals()
	require.Len(t, lines, 3)
	assert.Equal(t, "server: connections refused at accept: the MaxHandshakes bound was reached", lines[2].msg)
	assert.Equal(t, "handshake_limit", lines[2].attrs["reason"])
	assert.Equal(t, int64(1), lines[2].attrs["refused"])
	assert.Equal(t, int64(2), lines[2].attrs["bound"])
	assert.Contains(t, lines[2].attrs["last_remote"], "127.0.0.4:")

	st := s.Stats()
	assert.Equal(t, uint64(5), st.RefusedHandshakePerAddress)
	assert.Equal(t, uint64(1), st.RefusedHandshakeLimit)
}
