package client

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// endpoint is one server address and its current connection. At most one
// dial to an endpoint runs at a time; callers that need the endpoint wait
// for it. Consecutive dial failures back off (Options.Backoff).
type endpoint struct {
	idx  int
	addr string

	cur     atomic.Pointer[conn] // the connection new calls use; nil if none
	retryAt atomic.Int64         // unix nanoseconds before which no dial starts
	stage   atomic.Int32         // what the running dial is doing (stages)
	stats   endpointStats        // policy decisions and dials (endpoint_stats.go)

	mu       sync.Mutex
	dialing  chan struct{} // closed when the running dial ends; nil if none
	lastErr  error         // the last dial failure
	failures int           // consecutive dial failures
	connects int           // dials that succeeded (for the log)
}

// ready returns the endpoint's connection if new calls may use it.
func (ep *endpoint) ready() *conn {
	if cn := ep.cur.Load(); cn != nil && cn.usable.Load() {
		return cn
	}
	return nil
}

// detach forgets cn as the endpoint's connection (it is going away or
// closed); the next call dials a new one.
func (ep *endpoint) detach(cn *conn) { ep.cur.CompareAndSwap(cn, nil) }

// score ranks endpoints for the next attempt: a connected endpoint first,
// then one that may be dialed now, then one backing off.
func (ep *endpoint) score(now int64) int {
	switch {
	case ep.ready() != nil:
		return 0
	case ep.retryAt.Load() <= now:
		return 1
	default:
		return 2
	}
}

// connFor returns a ready connection to ep, dialing it if needed. It waits
// for a running dial within ctx. When ep is backing off after a failed
// dial, it fails at once with that dial's error, unless waitReady: then it
// waits for the backoff, within ctx, and dials. An error means nothing was
// sent.
func (c *Client) connFor(ctx context.Context, ep *endpoint, waitReady bool) (*conn, error) {
	for {
		if cn := ep.ready(); cn != nil {
			return cn, nil
		}
		ep.mu.Lock()
		if cn := ep.ready(); cn != nil {
			ep.mu.Unlock()
			return cn, nil
		}
		ch := ep.dialing
		if ch == nil {
			if wait := time.Until(time.Unix(0, ep.retryAt.Load())); wait > 0 {
				if err := ep.lastErr; err != nil && !waitReady {
					// Fail fast: the endpoint's connection is gone and
					// its last dial failed.
					ep.mu.Unlock()
					return nil, err
				}
				ep.mu.Unlock()
				if err := c.sleep(ctx, wait); err != nil {
					if ctx.Err() != nil {
						err = &waitError{addr: ep.addr, stage: "waiting to dial again after a failed dial", err: err}
					}
					return nil, err
				}
				continue
			}
			ch = make(chan struct{})
			if !c.goTracked(func() { c.dial(ep, ch) }) {
				ep.mu.Unlock()
				return nil, errClientClosed
			}
			ep.dialing = ch
		}
		ep.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, &waitError{addr: ep.addr, stage: ep.stageName(), err: ctx.Err()}
		}
		if cn := ep.ready(); cn != nil {
			return cn, nil
		}
		ep.mu.Lock()
		err := ep.lastErr
		ep.mu.Unlock()
		if err == nil {
			err = unavailable("connection to " + ep.addr + " lost")
		}
		return nil, err
	}
}

// dial runs one connection attempt to ep on its own goroutine (tracked by
// the Client), bounded by DialTimeout and Close, publishes the result and
// closes ch.
func (c *Client) dial(ep *endpoint, ch chan struct{}) {
	defer c.wg.Done()
	ctx, cancel := context.WithTimeout(c.ctx, c.cfg.DialTimeout)
	cn, err := c.connect(ctx, ep)
	cancel()
	ep.stage.Store(0)
	if err == nil && !c.track(cn) {
		_ = cn.w.Close()
		_ = cn.nc.Close()
		cn, err = nil, errClientClosed
	}
	ep.stats.dialed(err)
	ep.mu.Lock()
	failures, connects := ep.failures, ep.connects
	var retryIn time.Duration
	if err != nil {
		ep.failures++
		failures = ep.failures
		ep.lastErr = newDialError(ep.addr, err)
		retryIn = c.cfg.Backoff.delay(ep.failures)
		ep.retryAt.Store(time.Now().Add(retryIn).UnixNano())
	} else {
		ep.connects++
		ep.failures, ep.lastErr = 0, nil
		ep.retryAt.Store(0)
		ep.cur.Store(cn)
	}
	ep.dialing = nil
	ep.mu.Unlock()
	close(ch)
	if err != nil {
		c.logDialFailed(ep, failures, retryIn, err)
	} else {
		c.logConnected(ep, connects > 0, failures)
		cn.startKeepalive()
	}
}
