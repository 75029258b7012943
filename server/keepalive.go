package server

import (
	"time"

	"github.com/sluicerpc/sluice/protocol"
)

// The connection's watchdog runs on a timer, not a goroutine, and reads
// only counters the reader bumps: the request path reads no clock for it.
//
// Keepalive: when no frame at all arrived during a keepalive interval the
// server sends a Ping; when none arrived during the next one either, the
// client is gone and the connection is closed. Idle: when no call was in
// flight and no Request or Cancel arrived for the idle timeout, the server
// sends a GoAway and closes the connection (pings do not count as
// activity).

// tickPeriod is how often the watchdog looks: a quarter of the shorter
// of the two intervals, at least 10ms.
func (c *conn) tickPeriod() time.Duration {
	p := time.Duration(0)
	if k := c.s.o.KeepaliveInterval; k > 0 {
		p = k
	}
	if i := c.s.o.IdleTimeout; i > 0 && (p == 0 || i < p) {
		p = i
	}
	if p == 0 {
		return 0
	}
	return max(p/4, 10*time.Millisecond)
}

type watch struct {
	period             time.Duration
	frames, callFrames uint64
	silent, idle       time.Duration // since the last frame, call activity
	pinged             bool
}

func (c *conn) startTicker() {
	p := c.tickPeriod()
	if p == 0 {
		return
	}
	w := &watch{period: p}
	c.mu.Lock()
	c.ticker = time.AfterFunc(p, func() { c.tick(w) })
	c.mu.Unlock()
}

func (c *conn) stopTicker() {
	c.mu.Lock()
	if c.ticker != nil {
		c.ticker.Stop()
		c.ticker = nil
	}
	c.mu.Unlock()
}

func (c *conn) tick(w *watch) {
	if f := c.frames.Load(); f != w.frames || c.paused.Load() {
		// A reader paused by backpressure reads nothing by design; the
		// write timeout judges that client.
		w.frames, w.silent, w.pinged = f, 0, false
	} else {
		w.silent += w.period
	}
	if f := c.callFrame.Load(); f != w.callFrames || c.active.Load() > 0 {
		w.callFrames, w.idle = f, 0
	} else {
		w.idle += w.period
	}
	if k := c.s.o.KeepaliveInterval; k > 0 {
		switch {
		case w.silent >= 2*k && w.pinged:
			c.logKeepalive()
			c.close(errKeepalive)
			return
		case w.silent >= k && !w.pinged:
			w.pinged = true
			// Never blocks the timer's goroutine: a Ping of 16 bytes
			// may go beyond the write buffer's bound.
			_ = c.w.WriteNoWait(keepalivePing)
		}
	}
	if i := c.s.o.IdleTimeout; i > 0 && w.idle >= i {
		c.logIdle()
		c.drainWith("idle timeout")
		return
	}
	c.mu.Lock()
	if c.ticker != nil {
		c.ticker.Reset(w.period)
	}
	c.mu.Unlock()
}

var keepalivePing = protocol.AppendPing(nil, [8]byte{'k', 'e', 'e', 'p', 'a', 'l', 'v', 'e'})

var errKeepalive = errorString("server: keepalive: the client stopped answering")

type errorString string

func (e errorString) Error() string { return string(e) }
