package client

import (
	"math/bits"
	"time"

	"github.com/sluicerpc/sluice/protocol"
)

// The client's log lines (docs/observability.md lists them), each with
// the "endpoint" address: a dial that failed (Warn, rate-limited: the
// 1st, 2nd, 4th, 8th, ... consecutive failure of an endpoint, with the
// count, so that a server down for hours logs a few dozen lines, not one
// per backoff), a connection made again after a loss or failed dials
// (Info; the first connection of an endpoint at Debug), a GoAway received
// (Info) and a connection lost (Info). Calls are never logged.

// logDialFailed logs the failures-th consecutive failed dial of ep, if it
// is a power of two.
func (c *Client) logDialFailed(ep *endpoint, failures int, retryIn time.Duration, err error) {
	if failures < 1 || bits.OnesCount(uint(failures)) != 1 {
		return
	}
	c.cfg.Logger.Warn("sluice client: dial failed", "endpoint", ep.addr, "failures", failures, "retry_in", retryIn, "error", err.Error(),
		"next_line_at_failures", 2*failures)
}

// logHintOverCap counts a server retry hint above MaxRetryWait, which a
// call did not wait, and logs the 1st, 2nd, 4th, 8th ... of them.
func (c *Client) logHintOverCap(hint time.Duration) {
	n := c.hintsOverCap.Add(1)
	if bits.OnesCount64(n) != 1 {
		return
	}
	c.cfg.Logger.Warn("sluice client: a server's retry hint above MaxRetryWait was not waited", "retry_after", hint, "max_retry_wait", c.cfg.MaxRetryWait,
		"hints_over_max", n, "next_line_at", 2*n)
}

// logConnected logs a connection made to ep: the first at Debug, later
// ones (after a lost connection or failed dials) at Info.
func (c *Client) logConnected(ep *endpoint, again bool, failedDials int) {
	if !again && failedDials == 0 {
		c.cfg.Logger.Debug("sluice client: connected", "endpoint", ep.addr)
		return
	}
	c.cfg.Logger.Info("sluice client: reconnected", "endpoint", ep.addr, "failed_dials", failedDials)
}

func (c *conn) logGoAway(g *protocol.GoAway) {
	c.client.cfg.Logger.Info("sluice client: GoAway received", "endpoint", c.ep.addr, "last_id", g.LastID, "code", g.Code.String(), "message", g.Message)
}

func (c *conn) logLost(err error) {
	c.client.cfg.Logger.Info("sluice client: connection lost", "endpoint", c.ep.addr, "error", err.Error())
}
