package server_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/server"
)

// linesWith returns the lines logged so far whose message is msg.
func (h *recordingHandler) linesWith(msg string) []recordedLine {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []recordedLine
	for _, l := range h.lines {
		if l.msg == msg {
			out = append(out, l)
		}
	}
	return out
}

// messages returns every message logged so far, in order.
func (h *recordingHandler) messages() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, l := range h.lines {
		out = append(out, l.msg)
	}
	return out
}

const requestsRefused = "server: requests refused"

// TestRequestRefusalsAreLoggedOncePerInterval: 1000 requests refused
// within an interval are one Warn line at its end, refused=1000 (nothing
// before it: a refusal is only counted); each reason has its own line; a
// quiet interval logs nothing; Stop logs what the last partial interval
// refused before it returns. On synctest's clock: the interval is
// exactly 10s.
func TestRequestRefusalsAreLoggedOncePerInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logs := &recordingHandler{}
		adm := holdRule(1)
		s := startPipeServer(t, server.Options{Admission: &adm, Logger: slog.New(logs)})
		start := time.Now()
		c := s.dialRaw(t)
		c.send("echo", "Hold", nil, nil)
		<-s.mux.entered
		unknown := func(r *protocol.Request) { r.Method = 200 } // no such method
		refuse := func(n int, mod func(*protocol.Request)) {
			t.Helper()
			for range n {
				c.send("echo", "Hold", nil, mod)
				r := c.next()
				require.NotNil(t, r.err)
			}
		}
		refuse(1000, nil)
		synctest.Wait()
		assert.Empty(t, logs.linesWith(requestsRefused), "no line per refusal, none before the interval ends")

		time.Sleep(time.Until(start.Add(10 * time.Second)))
		synctest.Wait()
		lines := logs.linesWith(requestsRefused)
		require.Len(t, lines, 1, "%q", logs.messages())
		l := lines[0]
		assert.Equal(t, slog.LevelWarn, l.level)
		assert.Equal(t, "concurrency", l.attrs["reason"])
		assert.Equal(t, uint64(1000), l.attrs["refused"])
		assert.Equal(t, uint64(1000), l.attrs["total"])
		assert.Equal(t, "since the server started", l.attrs["counted"])
		assert.Equal(t, 10*time.Second, l.attrs["interval"])

		refuse(5, nil)
		refuse(2, unknown) // unimplemented: another reason, another line
		time.Sleep(10 * time.Second)
		synctest.Wait()
		lines = logs.linesWith(requestsRefused)
		require.Len(t, lines, 3, "%q", logs.messages())
		assert.Equal(t, "concurrency", lines[1].attrs["reason"])
		assert.Equal(t, uint64(5), lines[1].attrs["refused"])
		assert.Equal(t, uint64(1005), lines[1].attrs["total"])
		assert.Equal(t, "since the previous line", lines[1].attrs["counted"])
		assert.Equal(t, "unimplemented", lines[2].attrs["reason"])
		assert.Equal(t, uint64(2), lines[2].attrs["refused"])

		time.Sleep(10 * time.Second)
		synctest.Wait()
		require.Len(t, logs.linesWith(requestsRefused), 3, "a quiet interval logs nothing")

		refuse(3, nil)
		// From here on the test reads nothing: a reader drains the pipe, so
		// that the answers and the GoAway are not held by a client that
		// stopped reading (net.Pipe has no buffer).
		drainInBackground(c)
		close(s.mux.block)
		require.NoError(t, s.Stop(context.Background()))
		lines = logs.linesWith(requestsRefused)
		require.Len(t, lines, 4, "Stop reports the last partial interval: %q", logs.messages())
		assert.Equal(t, uint64(3), lines[3].attrs["refused"])
		assert.Equal(t, uint64(1008), lines[3].attrs["total"])
	})
}

// TestLifecycleLines: Serve's address, a connection accepted (Debug, with
// its id and remote address), one closed for a protocol violation (Warn),
// Stop's begin, its GoAway (Info) and its drain.
func TestLifecycleLines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logs := &recordingHandler{}
		s := startPipeServer(t, server.Options{Logger: slog.New(logs)})
		synctest.Wait()
		serving := logs.linesWith("server: serving")
		require.Len(t, serving, 1)
		assert.Equal(t, slog.LevelInfo, serving[0].level)
		assert.Equal(t, s.addr, serving[0].attrs["addr"])

		bad := s.dialRaw(t)
		ack, err := protocol.AppendHandshakeAck(nil, &protocol.HandshakeAck{Version: protocol.Version, MaxFrameSize: 1 << 20})
		require.NoError(t, err)
		bad.write(ack) // a client never sends one
		h, _ := bad.read()
		require.Equal(t, protocol.FrameError, h.Type, "a connection Error, then the close")
		_, _, err = bad.readErr()
		require.Error(t, err)
		synctest.Wait()
		v := logs.linesWith("server: connection closed: protocol violation")
		require.Len(t, v, 1, "%q", logs.messages())
		assert.Equal(t, slog.LevelWarn, v[0].level)
		assert.Equal(t, uint64(1), v[0].attrs["conn"])
		assert.NotEmpty(t, v[0].attrs["remote"])
		assert.Contains(t, v[0].attrs["error"], "HandshakeAck")

		good := s.dialRaw(t)
		id := good.send("echo", "Hold", nil, nil)
		<-s.mux.entered
		accepted := logs.linesWith("server: connection accepted")
		require.Len(t, accepted, 2)
		assert.Equal(t, slog.LevelDebug, accepted[1].level)
		assert.Equal(t, uint64(2), accepted[1].attrs["conn"])

		drainInBackground(good) // the GoAway and the Hold's answer
		stopped := make(chan error, 1)
		go func() { stopped <- s.Stop(context.Background()) }()
		synctest.Wait()
		begun := logs.linesWith("server: stop begun: draining")
		require.Len(t, begun, 1)
		assert.Equal(t, int64(1), begun[0].attrs["connections"])
		g := logs.linesWith("server: GoAway sent")
		require.Len(t, g, 1)
		assert.Equal(t, slog.LevelDebug, g[0].level, "one per connection: Stop's line counts them at Info")
		assert.Equal(t, uint64(2), g[0].attrs["conn"])
		assert.Equal(t, id, g[0].attrs["last_id"])
		assert.Equal(t, "server stopping", g[0].attrs["message"])
		assert.Empty(t, logs.linesWith("server: stopped: drained"), "a call in flight")

		close(s.mux.block)
		require.NoError(t, <-stopped)
		drained := logs.linesWith("server: stopped: drained")
		require.Len(t, drained, 1)
		assert.Equal(t, slog.LevelInfo, drained[0].level)
		closed := logs.linesWith("server: connection closed")
		require.Len(t, closed, 2, "%q", logs.messages())
		for _, l := range closed {
			assert.Equal(t, slog.LevelDebug, l.level)
		}
		assert.Empty(t, logs.linesWith("server: stop forced: the context ended before the drain, closing what remains"))
	})
}

// TestStopForcedIsLogged: a Stop whose context ends with a call in flight
// says so at Warn.
func TestStopForcedIsLogged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logs := &recordingHandler{}
		s := startPipeServer(t, server.Options{Logger: slog.New(logs)})
		c := s.dialRaw(t)
		c.send("echo", "Hold", nil, nil)
		<-s.mux.entered
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		require.ErrorIs(t, s.Stop(ctx), context.DeadlineExceeded)
		f := logs.linesWith("server: stop forced: the context ended before the drain, closing what remains")
		require.Len(t, f, 1, "%q", logs.messages())
		assert.Equal(t, slog.LevelWarn, f[0].level)
		assert.Equal(t, time.Second, f[0].attrs["elapsed"])
		assert.True(t, strings.Contains(f[0].attrs["error"].(string), "deadline"))
		require.Len(t, logs.linesWith("server: closed"), 1)
		close(s.mux.block)
	})
}

// drainInBackground reads c's frames until its connection closes, so that
// the server's writes to a client the test no longer reads do not wait on
// net.Pipe (which has no buffer) until the write timeout: inside a
// synctest bubble they would wait for ever, since a call goroutine blocked
// on the connection's GoAway mutex is not durably blocked and time does
// not advance.
func drainInBackground(c *rawClient) {
	go func() {
		for {
			if _, _, err := c.rd.ReadFrame(); err != nil {
				return
			}
		}
	}()
}
