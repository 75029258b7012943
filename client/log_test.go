package client_test

import (
	"context"
	"log/slog"
	"math/bits"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/client"
	"github.com/sluicerpc/sluice/server"
)

// recordHandler keeps every record's level, message and attributes.
type recordHandler struct {
	mu    sync.Mutex
	lines []logLine
}

type logLine struct {
	level slog.Level
	msg   string
	attrs map[string]any
}

func (h *recordHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *recordHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *recordHandler) WithGroup(string) slog.Handler            { return h }
func (h *recordHandler) Handle(_ context.Context, r slog.Record) error {
	l := logLine{level: r.Level, msg: r.Message, attrs: map[string]any{}}
	r.Attrs(func(a slog.Attr) bool { l.attrs[a.Key] = a.Value.Any(); return true })
	h.mu.Lock()
	h.lines = append(h.lines, l)
	h.mu.Unlock()
	return nil
}

func (h *recordHandler) with(msg string) []logLine {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []logLine
	for _, l := range h.lines {
		if l.msg == msg {
			out = append(out, l)
		}
	}
	return out
}

// TestConnectionEventsAreLogged: the first connection (Debug), the
// server's GoAway (Info), the dials that fail while it is down (Warn, only
// the 1st, 2nd, 4th, ... consecutive failure: a long outage is a few
// lines), and the connection made again (Info, with the failed dials).
func TestConnectionEventsAreLogged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logs := &recordHandler{}
		n := newPipeNet()
		ts := n.startServer(t, echoMux(nil), server.Options{}, "")
		c := n.dial(t, client.Options{Logger: slog.New(logs), Backoff: client.Backoff{Initial: 10 * time.Millisecond, Max: 40 * time.Millisecond}}, ts.addr)
		_, err := c.CallRaw(ctxTimeout(t, 5*time.Second), "echo/Echo", []byte("x"))
		require.NoError(t, err)
		connected := logs.with("sluice client: connected")
		require.Len(t, connected, 1)
		assert.Equal(t, slog.LevelDebug, connected[0].level)
		assert.Equal(t, ts.addr, connected[0].attrs["endpoint"])

		require.NoError(t, ts.srv.Stop(context.Background()))
		synctest.Wait()
		g := logs.with("sluice client: GoAway received")
		require.Len(t, g, 1)
		assert.Equal(t, slog.LevelInfo, g[0].level)
		assert.Equal(t, ts.addr, g[0].attrs["endpoint"])
		assert.Equal(t, "server stopping", g[0].attrs["message"])
		ts.close(t)

		// Down for 2s: about 50 failed dials at 40ms apart.
		srv2, err := server.New(echoMux(nil), server.Options{})
		require.NoError(t, err)
		served := make(chan error, 1)
		go func() {
			time.Sleep(2 * time.Second)
			l, err := n.n.Listen(ts.addr)
			if err != nil {
				served <- err
				return
			}
			served <- srv2.Serve(l)
		}()
		_, err = c.CallRaw(ctxTimeout(t, 5*time.Second), "echo/Echo", []byte("x"), client.WaitForReady())
		require.NoError(t, err)

		re := logs.with("sluice client: reconnected")
		require.Len(t, re, 1)
		assert.Equal(t, slog.LevelInfo, re[0].level)
		failed := re[0].attrs["failed_dials"].(int64)
		require.Greater(t, failed, int64(40), "2s of 10..48ms backoffs")
		var want []int64
		for f := int64(1); f <= failed; f *= 2 {
			want = append(want, f)
		}
		var got []int64
		for _, l := range logs.with("sluice client: dial failed") {
			assert.Equal(t, slog.LevelWarn, l.level)
			assert.Equal(t, ts.addr, l.attrs["endpoint"])
			assert.NotEmpty(t, l.attrs["error"])
			got = append(got, l.attrs["failures"].(int64))
		}
		assert.Equal(t, want, got, "one line per power of two of %d failures", failed)
		assert.Equal(t, bits.Len64(uint64(failed)), len(got))
		require.NoError(t, srv2.Close())
		require.ErrorIs(t, <-served, server.ErrServerClosed)
	})
}
