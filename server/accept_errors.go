package server

import (
	"errors"
	"log/slog"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/sluicerpc/sluice/spi"
)

// The accept loop survives what the process runs out of. An Accept that
// fails with a resource error (EMFILE: the process's descriptors are all
// open; ENFILE: the system's; ENOBUFS, ENOMEM), a connection aborted
// before it was accepted (ECONNABORTED), an interrupted call or a timeout
// is retried after a back-off that doubles from 5 ms to 1 s (as net/http
// does) and resets at the next accepted connection; any other error ends
// Serve. Each retried failure is counted (Stats().AcceptErrors, the
// metric sluice.server.accept.errors) and logged at Warn at most once per
// refusalLogInterval, with the count since the last line.

// acceptRetryable reports whether Serve should back off and accept again
// after err.
func acceptRetryable(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	for _, e := range []syscall.Errno{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM, syscall.ECONNABORTED, syscall.EINTR, syscall.EAGAIN} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// acceptBackoff is the wait after a retryable failure that follows a wait
// of last (0 for the first).
func acceptBackoff(last time.Duration) time.Duration {
	return min(max(2*last, 5*time.Millisecond), time.Second)
}

// acceptErrorLog rate-limits the accept loop's failure lines.
type acceptErrorLog struct {
	logger *slog.Logger
	clock  spi.Clock

	mu      sync.Mutex
	pending int64
	last    time.Time
	logged  bool
}

// failed records a retried Accept failure and logs a line if one is due.
func (l *acceptErrorLog) failed(err error, addr string, wait time.Duration) {
	now := l.clock.Now()
	l.mu.Lock()
	l.pending++
	if l.logged && now.Sub(l.last) < refusalLogInterval {
		l.mu.Unlock()
		return
	}
	n := l.pending
	l.pending, l.last, l.logged = 0, now, true
	l.mu.Unlock()
	l.logger.Warn("server: accept failed, retrying after a back-off (the process may be out of file descriptors)",
		"addr", addr, "error", err.Error(), "failures", n, "backoff", wait, "next_line_after", refusalLogInterval)
}
