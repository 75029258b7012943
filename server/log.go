package server

import (
	"context"
	"log/slog"
	"time"
)

// The server's log lines (docs/observability.md lists them): lifecycle
// events at Info (Warn when a stop is forced), connections closed for
// cause at Info or Warn, connections accepted and closed by design at
// Debug. Every connection line carries "conn" (the connection's id, as
// kernel requests see it) and "remote". None is on the request path:
// refused requests are counted, and logged by requestRefusalLog.

// logConn logs a line about c at level, with its id and remote address
// first. It costs an Enabled check when the level is off.
func (c *conn) logConn(level slog.Level, msg string, args ...any) {
	l := c.s.o.Logger
	if !l.Enabled(context.Background(), level) {
		return
	}
	var remote string
	if a := c.peer.RemoteAddr; a != nil {
		remote = a.String()
	}
	l.Log(context.Background(), level, msg, append([]any{"conn", c.id, "remote", remote}, args...)...)
}

func (c *conn) logAccepted() { c.logConn(slog.LevelDebug, "server: connection accepted") }

// logClosed logs the end of a connection that served calls: at Debug,
// with the read loop's error when it did not end by design.
func (c *conn) logClosed(err error) {
	if err != nil {
		c.logConn(slog.LevelDebug, "server: connection closed", "error", err.Error())
		return
	}
	c.logConn(slog.LevelDebug, "server: connection closed")
}

func (c *conn) logViolation(err error) {
	c.logConn(slog.LevelWarn, "server: connection closed: protocol violation", "error", err.Error())
}

func (c *conn) logWriteTimeout() {
	c.logConn(slog.LevelWarn, "server: connection closed: write timeout, the client stopped reading", "write_timeout", c.s.o.WriteTimeout)
}

func (c *conn) logKeepalive() {
	c.logConn(slog.LevelInfo, "server: connection closed: keepalive ping unanswered", "keepalive_interval", c.s.o.KeepaliveInterval)
}

func (c *conn) logIdle() {
	c.logConn(slog.LevelInfo, "server: connection draining: idle timeout", "idle_timeout", c.s.o.IdleTimeout)
}

func (c *conn) logGoAway(lastID uint64, msg string) {
	c.logConn(slog.LevelDebug, "server: GoAway sent", "last_id", lastID, "message", msg)
}

// logServing is Serve's first line.
func (s *Server) logServing(addr string) {
	s.o.Logger.Info("server: serving", "addr", addr)
}

// logStopBegun, logStopped and logStopForced bracket Stop; logClosed is
// Close's line.
func (s *Server) logStopBegun(conns int) {
	s.o.Logger.Info("server: stop begun: draining", "connections", conns)
}

func (s *Server) logStopped(start time.Time) {
	s.o.Logger.Info("server: stopped: drained", "elapsed", time.Since(start))
}

func (s *Server) logStopForced(start time.Time, err error) {
	s.o.Logger.Warn("server: stop forced: the context ended before the drain, closing what remains", "elapsed", time.Since(start), "error", err.Error())
}

func (s *Server) logClosed(conns int) {
	s.o.Logger.Info("server: closed", "connections", conns)
}
