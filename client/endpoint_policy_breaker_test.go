package client_test

import (
	"context"
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
)

// TestCircuitBreakerOverRealConnections: the built-in breaker opens on a
// failing endpoint and refuses its attempts without sending them; an
// update keeps it open; disable then enable starts a fresh, closed one.
func TestCircuitBreakerOverRealConnections(t *testing.T) {
	var sent atomic.Int32
	ts := startServer(t, echoMux(map[string]server.RawHandler{
		"echo/Down": func(context.Context, []byte) ([]byte, error) {
			sent.Add(1)
			return nil, status.New(protocol.CodeUnavailable, "down")
		},
	}), server.Options{})
	c := dial(t, client.Options{MaxAttempts: 1}, ts.addr)
	opts := endpointpolicy.CircuitBreakerOptions{MinimumThroughput: 4, FailureRatio: 0.5, BreakDuration: time.Hour}
	_, err := c.EnableCircuitBreaker(opts)
	require.NoError(t, err)

	for range 4 {
		_, err := c.CallRaw(ctxTimeout(t, 5*time.Second), "echo/Down", nil)
		requireCode(t, err, protocol.CodeUnavailable)
	}
	_, err = c.CallRaw(ctxTimeout(t, 5*time.Second), "echo/Down", nil)
	st := requireCode(t, err, protocol.CodeResourceExhausted)
	assert.Equal(t, "endpoint_policy", st.Reason)
	assert.Greater(t, st.RetryAfter, 59*time.Minute)
	assert.Equal(t, int32(4), sent.Load(), "an open breaker sends nothing")
	_, err = c.CallRaw(ctxTimeout(t, 5*time.Second), "echo/Echo", nil)
	requireCode(t, err, protocol.CodeResourceExhausted) // the whole endpoint is open

	// A live update keeps the state: still open.
	opts.FailureRatio = 0.9
	_, err = c.UpdateCircuitBreaker(opts)
	require.NoError(t, err)
	_, err = c.CallRaw(ctxTimeout(t, 5*time.Second), "echo/Echo", nil)
	requireCode(t, err, protocol.CodeResourceExhausted)

	// Disable then enable: a fresh breaker, closed.
	_, err = c.DisableEndpointPolicy()
	require.NoError(t, err)
	_, err = c.EnableCircuitBreaker(opts)
	require.NoError(t, err)
	out, err := c.CallRaw(ctxTimeout(t, 5*time.Second), "echo/Echo", []byte("back"))
	require.NoError(t, err)
	assert.Equal(t, "back", string(out))
}
