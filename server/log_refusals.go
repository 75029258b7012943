package server

import (
	"context"
	"log/slog"
	"sync"
)

// requestRefusalLog makes refused requests visible without one line per
// request: every refusal is only counted, by reason, in the server's
// counters (counters.refused: one atomic add, the cost it had before
// any logging; no lock, no clock read, no allocation on the refusal
// path). A goroutine started by the first Serve reads those counters
// every refusalLogInterval and logs, at Warn, one line per reason that
// rose since its previous line, with how many were refused since then;
// Stop and Close stop it and log what remains. A burst of 1000 refusals
// within an interval is one line with refused=1000, at the end of the
// interval (so the first refusal of a burst is reported up to one
// interval late).
//
// The interval runs on the time package's clock (testing/synctest fakes
// it in tests), not Options.Clock, which drives admission only.
type requestRefusalLog struct {
	logger *slog.Logger
	stats  *counters
	tick   periodic // flush, every refusalLogInterval

	mu     sync.Mutex           // flush
	logged [dropCanceled]uint64 // the counts already reported, by reason
	lines  [dropCanceled]bool   // a line of that reason was logged
}

func newRequestRefusalLog(logger *slog.Logger, stats *counters) *requestRefusalLog {
	l := &requestRefusalLog{logger: logger, stats: stats}
	l.tick = periodic{every: refusalLogInterval, run: func(context.Context) { l.flush() }}
	return l
}

// start starts the periodic flush until ctx ends, once; never after stop.
func (l *requestRefusalLog) start(ctx context.Context) { l.tick.start(ctx) }

// stop waits for the periodic flush to end (its ctx must be done) and
// logs the refusals not yet reported. It may be called more than once.
func (l *requestRefusalLog) stop() {
	l.tick.stop()
	l.flush()
}

// flush logs one line per reason refused since its previous line.
func (l *requestRefusalLog) flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for d := range dropCanceled {
		total := l.stats.refusals[d].Load()
		n := total - l.logged[d]
		if n == 0 {
			continue
		}
		since := "since the previous line"
		if !l.lines[d] {
			since = "since the server started"
		}
		l.logged[d], l.lines[d] = total, true
		l.logger.Warn("server: requests refused",
			"reason", d.String(),
			"refused", n,
			"counted", since,
			"total", total,
			"interval", refusalLogInterval)
	}
}
