package admin

import (
	"log/slog"
	"sync"
	"time"
)

// refusalLogInterval is the least time between two lines about refused
// (unauthenticated) requests.
const refusalLogInterval = 10 * time.Second

// refusalLog aggregates the log lines of refused requests: the first
// refusal is logged at once, later ones at most once per
// refusalLogInterval, each line with the refusals since the previous
// line. A flood of bad tokens made one line per request (any client that
// reaches the port could fill a disk). The refusals after the last line
// are counted in the next one. Safe for concurrent use; never blocks
// beyond its mutex.
type refusalLog struct {
	log *slog.Logger
	now func() time.Time

	mu       sync.Mutex
	last     time.Time // when the last line was written; zero: none yet
	since    uint64    // refusals since that line, not yet logged
	total    uint64
	lastSeen string // the remote address of the latest refusal
}

func newRefusalLog(l *slog.Logger) *refusalLog { return &refusalLog{log: l, now: time.Now} }

// refused records one refused request and logs it if a line is due.
func (l *refusalLog) refused(remote, method, path, reason string) {
	now := l.now()
	l.mu.Lock()
	l.since++
	l.total++
	l.lastSeen = remote
	if !l.last.IsZero() && now.Sub(l.last) < refusalLogInterval {
		l.mu.Unlock()
		return
	}
	n, total := l.since, l.total
	l.since, l.last = 0, now
	l.mu.Unlock()
	l.log.Warn("admin API: request refused", "remote", remote, "method", method, "path", path, "reason", reason,
		"refused", n, "refused_total", total, "interval", refusalLogInterval)
}
