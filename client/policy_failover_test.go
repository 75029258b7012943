package client_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/client"
	"github.com/sluicerpc/sluice/endpointpolicy"
	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/protocol/status"
	"github.com/sluicerpc/sluice/server"
	"github.com/sluicerpc/sluice/spi"
)

// refuseEndpoints is a custom policy that refuses the endpoints of its
// map, each with its hint (0: none), and allows the others, recording who
// was asked and reported.
type refuseEndpoints struct {
	refuse map[string]time.Duration

	mu      sync.Mutex
	next    uint64
	asked   map[string]int
	issued  map[uint64]string
	reports map[string]int
}

func newRefuseEndpoints(refuse map[string]time.Duration) *refuseEndpoints {
	return &refuseEndpoints{refuse: refuse, asked: map[string]int{}, issued: map[uint64]string{}, reports: map[string]int{}}
}

func (p *refuseEndpoints) TryAcquire(endpoint, _ string) spi.EndpointDecision {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.asked[endpoint]++
	if hint, ok := p.refuse[endpoint]; ok {
		return spi.EndpointDecision{RetryAfter: hint}
	}
	p.next++
	p.issued[p.next] = endpoint
	return spi.EndpointDecision{Allowed: true, Token: p.next}
}

func (p *refuseEndpoints) Report(_ spi.AttemptOutcome, token uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reports[p.issued[token]]++
}

// TestPolicyRefusalFailsOver: an attempt the policy refuses was never
// written, so the call moves to another allowed endpoint, without a hint
// and without spending one of its attempts: with one of two real
// endpoints refused, every call succeeds, on the other one.
func TestPolicyRefusalFailsOver(t *testing.T) {
	a := startServer(t, echoMux(nil), server.Options{})
	b := startServer(t, echoMux(nil), server.Options{})
	for _, attempts := range []int{1, 3} {
		c := dial(t, client.Options{MaxAttempts: attempts}, a.addr, b.addr)
		p := newRefuseEndpoints(map[string]time.Duration{a.addr: 0})
		_, err := c.SetEndpointPolicy(p)
		require.NoError(t, err)
		for i := range 40 {
			out, err := c.CallRaw(ctxTimeout(t, 5*time.Second), "echo/Echo", []byte{byte(i)})
			require.NoError(t, err, "MaxAttempts %d, call %d", attempts, i)
			require.Equal(t, []byte{byte(i)}, out)
		}
		p.mu.Lock()
		assert.Positive(t, p.asked[a.addr], "the round-robin tried a first for some calls")
		assert.Equal(t, 40, p.reports[b.addr])
		assert.Zero(t, p.reports[a.addr])
		p.mu.Unlock()
	}
	assert.Zero(t, a.srv.Stats().Calls, "nothing was sent to the refused endpoint")
	assert.Equal(t, uint64(80), b.srv.Stats().Calls)
}

// TestEndpointConcurrencyRefusalFailsOver: EndpointConcurrency refuses
// with no hint; with the only slot of one endpoint held by a blocked call,
// the calls that try it first go to the other endpoint.
func TestEndpointConcurrencyRefusalFailsOver(t *testing.T) {
	blk := newBlocker(2)
	mux := func() *server.Mux { return echoMux(map[string]server.RawHandler{"echo/Block": blk.handle}) }
	a := startServer(t, mux(), server.Options{})
	b := startServer(t, mux(), server.Options{})
	c := dial(t, client.Options{}, a.addr, b.addr)
	p, err := endpointpolicy.NewEndpointConcurrency(1)
	require.NoError(t, err)
	_, err = c.SetEndpointPolicy(p)
	require.NoError(t, err)

	held := make(chan error, 1)
	go func() {
		_, err := c.CallRaw(ctxTimeout(t, 10*time.Second), "echo/Block", nil)
		held <- err
	}()
	recv(t, blk.started) // one endpoint's only slot is taken
	for i := range 20 {
		_, err := c.CallRaw(ctxTimeout(t, 5*time.Second), "echo/Echo", nil)
		require.NoError(t, err, "call %d", i)
	}
	close(blk.release)
	require.NoError(t, recv(t, held))
}

// TestEveryEndpointRefusedFailsWithTheShortestHint: only when every
// endpoint refuses does the call fail, with ResourceExhausted (reason
// endpoint_policy) and the shortest of the hints; with no attempt left it
// does not wait for it.
func TestEveryEndpointRefusedFailsWithTheShortestHint(t *testing.T) {
	a := startServer(t, echoMux(nil), server.Options{})
	b := startServer(t, echoMux(nil), server.Options{})
	c := dial(t, client.Options{MaxAttempts: 1}, a.addr, b.addr)
	p := newRefuseEndpoints(map[string]time.Duration{a.addr: 3 * time.Second, b.addr: time.Second})
	_, err := c.SetEndpointPolicy(p)
	require.NoError(t, err)
	for range 4 { // the round-robin starts with a, then with b
		start := time.Now()
		_, err := c.CallRaw(ctxTimeout(t, 10*time.Second), "echo/Echo", nil)
		st := requireCode(t, err, protocol.CodeResourceExhausted)
		assert.Equal(t, "endpoint_policy", st.Reason)
		assert.Equal(t, time.Second, st.RetryAfter)
		assert.Less(t, time.Since(start), 500*time.Millisecond)
	}
	p.mu.Lock()
	assert.Equal(t, 4, p.asked[a.addr])
	assert.Equal(t, 4, p.asked[b.addr])
	p.mu.Unlock()
	assert.Zero(t, a.srv.Stats().Calls+b.srv.Stats().Calls)
}

// TestHalfOpenBreakerRefusalFailsOver: a half-open breaker with its probe
// in flight refuses the endpoint's other attempts without a hint; they go
// to the other endpoint.
func TestHalfOpenBreakerRefusalFailsOver(t *testing.T) {
	blk := newBlocker(4)
	var probing atomic.Bool
	a := startServer(t, echoMux(map[string]server.RawHandler{"svc/X": func(ctx context.Context, req []byte) ([]byte, error) {
		if probing.Load() {
			return blk.handle(ctx, req)
		}
		return nil, status.New(protocol.CodeUnavailable, "down")
	}}), server.Options{})
	b := startServer(t, echoMux(map[string]server.RawHandler{"svc/X": func(_ context.Context, req []byte) ([]byte, error) { return req, nil }}), server.Options{})
	c := dial(t, client.Options{MaxAttempts: 1}, a.addr, b.addr)
	const breakFor = 100 * time.Millisecond
	br, err := endpointpolicy.NewCircuitBreaker(endpointpolicy.CircuitBreakerOptions{MinimumThroughput: 2, FailureRatio: 0.5, BreakDuration: breakFor})
	require.NoError(t, err)
	_, err = c.SetEndpointPolicy(br)
	require.NoError(t, err)

	for br.State(a.addr) != endpointpolicy.Open {
		_, _ = c.CallRaw(ctxTimeout(t, 5*time.Second), "svc/X", nil)
	}
	probing.Store(true)
	time.Sleep(breakFor + 20*time.Millisecond) // the next attempt on a is a probe
	probe := make(chan struct{})
	go func() {
		defer close(probe)
		for range 10 { // until one of them is the probe, held on a
			if _, err := c.CallRaw(ctxTimeout(t, 10*time.Second), "svc/X", nil); err != nil {
				return
			}
		}
	}()
	recv(t, blk.started)
	require.Equal(t, endpointpolicy.HalfOpen, br.State(a.addr))
	for i := range 20 {
		_, err := c.CallRaw(ctxTimeout(t, 5*time.Second), "svc/X", []byte("x"))
		require.NoError(t, err, "call %d", i)
	}
	close(blk.release)
	<-probe
}
