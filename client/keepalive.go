package client

import (
	"time"

	"github.com/sluicerpc/sluice/protocol"
)

// keepalive is a connection's own liveness check (Options.KeepaliveInterval).
// It runs on a timer, not a goroutine: when no frame arrived during an
// interval it sends a Ping, and when none arrived during the next one either
// it closes the connection. Its fields are guarded by the conn's mu.
type keepalive struct {
	t       *time.Timer
	seen    uint64 // c.received at the last tick
	pinged  bool
	stopped bool
}

// startKeepalive arms the timer; called once the reader runs.
func (c *conn) startKeepalive() {
	d := c.client.cfg.KeepaliveInterval
	if d <= 0 {
		return
	}
	c.mu.Lock()
	if !c.closed {
		c.ka.t = time.AfterFunc(d, c.keepaliveTick)
	}
	c.mu.Unlock()
}

func (c *conn) keepaliveTick() {
	d := c.client.cfg.KeepaliveInterval
	n := c.received.Load()
	c.mu.Lock()
	if c.ka.stopped {
		c.mu.Unlock()
		return
	}
	ping, dead := false, false
	switch {
	case n != c.ka.seen:
		c.ka.seen, c.ka.pinged = n, false
	case c.ka.pinged:
		dead = true
	default:
		c.ka.pinged, ping = true, true
	}
	if !dead {
		c.ka.t.Reset(d)
	}
	c.mu.Unlock()
	switch {
	case dead:
		c.close(unavailable("keepalive: the server did not answer"))
	case ping:
		var data [8]byte
		frame := protocol.AppendPing(make([]byte, 0, protocol.HeaderSize+8), data)
		// Never blocks the timer's goroutine behind a full writer: a
		// server that does not read is the write timeout's to judge.
		_ = c.w.WriteNoWait(frame)
	}
}

// stop disarms the timer; the caller holds the conn's mu.
func (k *keepalive) stop() {
	k.stopped = true
	if k.t != nil {
		k.t.Stop()
	}
}
