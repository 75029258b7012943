package client

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Client calls the methods of a set of equivalent servers (endpoints) over
// one multiplexed connection per endpoint. It is safe for concurrent use;
// create it with Dial and release it with Close.
type Client struct {
	cfg *config
	eps []*endpoint
	rr  atomic.Uint32 // round-robin start for endpoint selection

	// policy is the endpoint admission policy, captured per attempt.
	policy policyControl

	calls callPool // idle calls

	decodes decodeBudget // Options.MaxDecodedBytes, shared by every decode

	metrics *clientMetrics // nil without Options.MeterProvider

	ctx    context.Context // cancelled by Close: aborts dials and waits
	cancel context.CancelFunc

	closing atomic.Bool // set by Close, read on every call without a lock

	hintsOverCap atomic.Uint64 // server retry hints above MaxRetryWait (logHintOverCap)

	mu     sync.Mutex
	closed bool // guarded by mu; decides which goroutines Close waits for
	conns  map[*conn]struct{}
	wg     sync.WaitGroup // dials and readers
}

// Dial creates a Client for endpoints ("host:port" each) and connects to
// all of them concurrently before it returns. It fails only when no
// endpoint could be reached by the time every dial ended or ctx ended;
// the error then names each endpoint's failure (for instance a TLS
// certificate error). Endpoints that were not reached, and connections lost
// later, are dialed again on demand by the calls that need them.
//
// ctx bounds only the wait in Dial; each dial is bounded by
// Options.DialTimeout.
func Dial(ctx context.Context, endpoints []string, opts Options) (*Client, error) {
	if len(endpoints) == 0 {
		return nil, errors.New("sluice client: no endpoint to dial")
	}
	cfg, err := opts.resolve()
	if err != nil {
		return nil, err
	}
	c := &Client{cfg: cfg, conns: make(map[*conn]struct{}), decodes: decodeBudget{size: max(cfg.MaxDecodedBytes, 0)}}
	c.policy.logf = cfg.Logger.Warn
	c.ctx, c.cancel = context.WithCancel(context.Background())
	for i, addr := range endpoints {
		c.eps = append(c.eps, &endpoint{idx: i, addr: addr})
	}
	if mp := cfg.MeterProvider; mp != nil {
		if c.metrics, err = newClientMetrics(mp, c); err != nil {
			c.cancel()
			return nil, fmt.Errorf("sluice client: creating the metrics: %w", err)
		}
	}

	errs := make([]error, len(c.eps)) // in the order of endpoints
	var wg sync.WaitGroup
	for i, ep := range c.eps {
		wg.Go(func() { _, errs[i] = c.connFor(ctx, ep, true) })
	}
	wg.Wait()
	for _, err := range errs {
		if err == nil {
			return c, nil
		}
	}
	_ = c.Close()
	return nil, &unreachableError{errs}
}

// unreachableError is Dial's error when no endpoint could be reached: each
// endpoint's failure, under one prefix. errors.Is, errors.As and
// status.Code find the causes (the first one's status).
type unreachableError struct{ errs []error }

func (e *unreachableError) Error() string {
	var b strings.Builder
	b.WriteString("sluice client: ")
	if len(e.errs) > 1 {
		b.WriteString("no endpoint reachable: ")
	}
	for i, err := range e.errs {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(err.Error())
	}
	return b.String()
}

func (e *unreachableError) Unwrap() []error { return e.errs }

// Close closes every connection and stops every goroutine of the Client;
// it returns once they have ended. Calls in flight and calls made afterwards
// fail with status Canceled; the server may still run the calls it
// received. Close unregisters the client's metric observations
// (Options.MeterProvider). Close is idempotent.
func (c *Client) Close() error {
	c.metrics.close()
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		c.policy.close() // a no-op unless this Close overtook the first
		c.wg.Wait()
		c.policy.waitRetired()
		return nil
	}
	c.closed = true
	c.closing.Store(true)
	conns := make([]*conn, 0, len(c.conns))
	for cn := range c.conns {
		conns = append(conns, cn)
	}
	c.mu.Unlock()
	c.policy.close() // outside c.mu: it may run the policy's Close
	c.cancel()
	for _, cn := range conns {
		cn.close(errClientClosed)
	}
	c.wg.Wait()
	// The attempts still in flight fail now; the last report of each
	// retired policy closes it.
	c.policy.waitRetired()
	return nil
}

func (c *Client) isClosed() bool { return c.closing.Load() }

// goTracked runs f on a goroutine the Client waits for in Close, unless
// the Client is closed (then it returns false). f must call c.wg.Done.
func (c *Client) goTracked(f func()) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.wg.Add(1)
	go f()
	return true
}

// track registers a new connection and starts its reader, unless the
// Client is closed.
func (c *Client) track(cn *conn) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.conns[cn] = struct{}{}
	c.wg.Add(1)
	go cn.readLoop()
	return true
}

func (c *Client) untrack(cn *conn) {
	c.mu.Lock()
	delete(c.conns, cn)
	c.mu.Unlock()
}

// sleep waits for d, ctx or Close, whichever comes first.
func (c *Client) sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-c.ctx.Done():
		return errClientClosed
	}
}

// pick returns the endpoint for the next attempt: the best ranked (see
// endpoint.score), preferring endpoints this call has not tried yet, ties
// broken round-robin, and skipping those the endpoint policy refused
// (unless it refused them all).
func (c *Client) pick(tried, refused uint64) *endpoint {
	n := len(c.eps)
	if n == 1 {
		return c.eps[0]
	}
	start := int(c.rr.Add(1)) % n
	now := time.Now().UnixNano()
	best := c.eps[start]
	bestScore := 1 << 30
	for i := range n {
		ep := c.eps[(start+i)%n]
		if wasTried(refused, ep) {
			continue
		}
		s := ep.score(now)
		if wasTried(tried, ep) {
			s += 3
		}
		if s < bestScore {
			best, bestScore = ep, s
		}
	}
	return best
}

// untried reports whether some endpoint was not tried by this call yet.
func (c *Client) untried(tried uint64) bool {
	for _, ep := range c.eps {
		if !wasTried(tried, ep) {
			return true
		}
	}
	return false
}

func wasTried(tried uint64, ep *endpoint) bool {
	return ep.idx < 64 && tried&(1<<ep.idx) != 0
}

func markTried(tried uint64, ep *endpoint) uint64 {
	if ep.idx < 64 {
		tried |= 1 << ep.idx
	}
	return tried
}
