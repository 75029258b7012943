package server

import (
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/sluicerpc/sluice/server/internal/conngate"
	"github.com/sluicerpc/sluice/spi"
)

// refusalLogInterval is the least time between two log lines of one
// refusal reason.
const refusalLogInterval = 10 * time.Second

// refusalLog makes connection refusals at accept visible without letting a
// flood of them flood the log: the first refusal of a reason is logged at
// once, at Warn; later ones are counted, and the first refusal of that
// reason at least refusalLogInterval after the previous line logs how many
// were refused since it (that one included). Refusals that stop within an
// interval are reported with the next refusal of their reason, and always
// in Stats. It is called by the accept loop only: recording takes a mutex
// and reads the clock; the line itself (which may block on the handler's
// writer) at most once per interval per reason.
type refusalLog struct {
	logger *slog.Logger
	clock  spi.Clock
	gate   *conngate.Gate // for the bound in force, in the line

	mu    sync.Mutex
	lines [conngate.ReasonCount]refusalLine
}

// refusalLine is the state of one reason's lines.
type refusalLine struct {
	pending int64     // refusals not yet reported
	last    time.Time // when the last line was logged
	logged  bool      // a line was logged
}

// refused records a connection from remote refused for reason r, and logs
// a line if one is due.
func (l *refusalLog) refused(r conngate.Reason, remote net.Addr) {
	now := l.clock.Now()
	l.mu.Lock()
	ln := &l.lines[r]
	ln.pending++
	if ln.logged && now.Sub(ln.last) < refusalLogInterval {
		l.mu.Unlock()
		return
	}
	n, first := ln.pending, !ln.logged
	ln.pending, ln.last, ln.logged = 0, now, true
	l.mu.Unlock()

	lim := l.gate.Limits()
	bound, field := lim.MaxConnections, "MaxConnections"
	switch r {
	case conngate.ReasonHandshakeLimit:
		bound, field = lim.MaxHandshakes, "MaxHandshakes"
	case conngate.ReasonHandshakePerAddress:
		bound, field = lim.MaxHandshakesPerAddress, "MaxHandshakesPerAddress"
	}
	since := "since the previous line"
	if first {
		since = "since the server started"
	}
	var addr string
	if remote != nil {
		addr = remote.String()
	}
	l.logger.Warn("server: connections refused at accept: the "+field+" bound was reached",
		"reason", r.String(),
		"refused", n,
		"counted", since,
		"bound", bound,
		"last_remote", addr,
		"next_line_after", refusalLogInterval)
}
