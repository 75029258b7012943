package client_test

import (
	"context"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/client"
	"github.com/sluicerpc/sluice/endpointpolicy"
	"github.com/sluicerpc/sluice/kernel"
	"github.com/sluicerpc/sluice/limiters/concurrency"
	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/protocol/status"
	"github.com/sluicerpc/sluice/server"
	"github.com/sluicerpc/sluice/spi"
)

// The client's observable instruments, which Close unregisters.
var clientObservables = []string{
	"sluice.client.endpoint_policy.decisions", "sluice.client.endpoint_policy.mode", "sluice.client.endpoint_policy.generation",
	"sluice.client.dials", "sluice.client.connections.reconnects", "sluice.client.connections.live",
}

// TestMetricsReportCallsByMethodAndCode: with a MeterProvider, every unary
// and one-way call is in rpc.client.call.duration by method and the code
// it returned (a call the server's admission refused with
// ResourceExhausted, a handler's error, a method the server does not
// have), with its sizes and attempts; the connection figures are
// observed; Close unregisters the observations.
func TestMetricsReportCallsByMethodAndCode(t *testing.T) {
	mr := newMetricsReader(t)
	b := newBlocker(1)
	ts := startServer(t, echoMux(map[string]server.RawHandler{
		"svc/M":     b.handle,
		"echo/Fail": func(context.Context, []byte) ([]byte, error) { return nil, status.New(protocol.CodeNotFound, "no") },
	}), server.Options{})
	enable(t, ts, kernel.Options{Methods: map[string]kernel.Rule{"svc/M": {Limits: []spi.Spec{concurrency.Spec(1)}}}})
	c := dial(t, client.Options{MeterProvider: mr.mp}, ts.addr)
	ctx := ctxTimeout(t, 5*time.Second)

	mr.collect()
	assert.Equal(t, int64(1), mr.value("sluice.client.connections.live", "endpoint", ts.addr))
	assert.Equal(t, int64(1), mr.value("sluice.client.dials", "endpoint", ts.addr, "outcome", "ok"))
	assert.Equal(t, int64(0), mr.value("sluice.client.dials", "endpoint", ts.addr, "outcome", "failed"))
	assert.Equal(t, int64(0), mr.value("sluice.client.connections.reconnects", "endpoint", ts.addr))
	assert.Equal(t, int64(1), mr.value("sluice.client.endpoint_policy.mode", "mode", "disabled"))
	assert.Equal(t, int64(0), mr.value("sluice.client.endpoint_policy.mode", "mode", "circuit_breaker"))
	assert.Equal(t, int64(0), mr.value("sluice.client.endpoint_policy.decisions"), "no policy, no decision")
	assert.Equal(t, 0, mr.points("sluice.client.circuit_breaker.state"), "no breaker, no circuit")
	assert.Equal(t, uint64(0), mr.count("rpc.client.call.duration"))

	for _, req := range []string{"abc", "defgh"} {
		out, err := c.CallRaw(ctx, "echo/Echo", []byte(req))
		require.NoError(t, err)
		require.Equal(t, req, string(out))
	}
	require.NoError(t, c.OneWay(ctx, "echo/Echo", []byte("1234567")))
	first := make(chan error, 1)
	go func() { _, err := c.CallRaw(ctx, "svc/M", []byte("x")); first <- err }()
	recv(t, b.started)
	_, err := c.CallRaw(ctx, "svc/M", []byte("y"))
	requireCode(t, err, protocol.CodeResourceExhausted)
	_, err = c.CallRaw(ctx, "echo/Fail", nil)
	requireCode(t, err, protocol.CodeNotFound)
	_, err = c.CallRaw(ctx, "nope/X", nil)
	requireCode(t, err, protocol.CodeUnimplemented)

	mr.collect()
	n, sum := mr.hist("rpc.client.request.size", callAttrs("echo/Echo", "OK")...)
	assert.Equal(t, uint64(3), n)
	assert.Equal(t, float64(3+5+7), sum)
	n, sum = mr.hist("rpc.client.response.size", callAttrs("echo/Echo", "OK")...)
	assert.Equal(t, uint64(2), n, "a one-way call has no response")
	assert.Equal(t, float64(3+5), sum)
	assert.Equal(t, uint64(3), mr.count("rpc.client.call.duration", callAttrs("echo/Echo", "OK")...))
	assert.Equal(t, uint64(1), mr.count("rpc.client.call.duration", callAttrs("svc/M", "ResourceExhausted")...))
	assert.Equal(t, uint64(0), mr.count("rpc.client.call.duration", callAttrs("svc/M", "OK")...), "the first svc/M is still running")
	assert.Equal(t, uint64(1), mr.count("rpc.client.call.duration", callAttrs("echo/Fail", "NotFound")...))
	assert.Equal(t, uint64(1), mr.count("rpc.client.call.duration", callAttrs("nope/X", "Unimplemented")...))
	assert.Equal(t, uint64(0), mr.count("rpc.client.response.size", callAttrs("echo/Fail", "NotFound")...), "a failed call has no response size")
	n, sum = mr.hist("sluice.client.call.attempts", callAttrs("svc/M", "ResourceExhausted")...)
	assert.Equal(t, uint64(1), n)
	assert.Equal(t, float64(1), sum, "a refusal without a hint is not retried")
	assert.Equal(t, uint64(6), mr.count("rpc.client.call.duration", "rpc.system.name", "sluice"))

	close(b.release)
	require.NoError(t, recv(t, first))
	mr.collect()
	assert.Equal(t, uint64(1), mr.count("rpc.client.call.duration", callAttrs("svc/M", "OK")...))
	assert.Equal(t, int64(1), mr.value("sluice.client.connections.live", "endpoint", ts.addr))

	require.NoError(t, c.Close())
	_, err = c.CallRaw(ctx, "echo/Echo", nil)
	requireCode(t, err, protocol.CodeCanceled)
	mr.collect()
	for _, name := range clientObservables {
		assert.Zero(t, mr.points(name), "%s is still observed after Close", name)
	}
	assert.Equal(t, uint64(1), mr.count("rpc.client.call.duration", callAttrs("echo/Echo", "Canceled")...), "a call after Close is recorded")
}

// TestMetricsReportBreakerStatesAndPolicyDecisions: a circuit opened by
// an endpoint's failures shows state=open for that endpoint (the other
// one stays closed), and the policy's decisions are counted per endpoint:
// allowed, refused by the breaker, and refused because a custom policy
// panicked.
func TestMetricsReportBreakerStatesAndPolicyDecisions(t *testing.T) {
	mr := newMetricsReader(t)
	var downSent atomic.Int32
	down := startServer(t, echoMux(map[string]server.RawHandler{
		"echo/Flaky": func(context.Context, []byte) ([]byte, error) {
			downSent.Add(1)
			return nil, status.New(protocol.CodeUnavailable, "down")
		},
	}), server.Options{})
	up := startServer(t, echoMux(map[string]server.RawHandler{
		"echo/Flaky": func(context.Context, []byte) ([]byte, error) { return []byte("up"), nil },
	}), server.Options{})
	c := dial(t, client.Options{MaxAttempts: 1, MeterProvider: mr.mp}, down.addr, up.addr)
	gen, err := c.EnableCircuitBreaker(endpointpolicy.CircuitBreakerOptions{MinimumThroughput: 4, FailureRatio: 0.5, BreakDuration: time.Hour})
	require.NoError(t, err)
	ctx := ctxTimeout(t, 5*time.Second)

	mr.collect()
	assert.Equal(t, int64(1), mr.value("sluice.client.endpoint_policy.mode", "mode", "circuit_breaker"))
	assert.Equal(t, int64(gen), mr.value("sluice.client.endpoint_policy.generation"))
	for _, addr := range []string{down.addr, up.addr} {
		assert.Equal(t, int64(1), mr.value("sluice.client.circuit_breaker.state", "endpoint", addr, "state", "closed"))
		assert.Equal(t, int64(0), mr.value("sluice.client.circuit_breaker.state", "endpoint", addr, "state", "open"))
	}

	// The calls alternate between the endpoints (round robin) until the
	// down one has failed 4 times, which opens its circuit.
	var ok int
	for i := 0; downSent.Load() < 4; i++ {
		require.Less(t, i, 20, "the down endpoint was not tried 4 times")
		if _, err := c.CallRaw(ctx, "echo/Flaky", nil); err == nil {
			ok++
		} else {
			requireCode(t, err, protocol.CodeUnavailable)
		}
	}
	// The next call goes to the up endpoint; the one after starts at the
	// down one, which its open circuit refuses, and moves to the up one.
	for range 2 {
		out, err := c.CallRaw(ctx, "echo/Flaky", nil)
		require.NoError(t, err)
		require.Equal(t, "up", string(out))
		ok++
	}
	assert.Equal(t, int32(4), downSent.Load(), "an open circuit sends nothing")

	mr.collect()
	assert.Equal(t, int64(1), mr.value("sluice.client.circuit_breaker.state", "endpoint", down.addr, "state", "open"))
	assert.Equal(t, int64(0), mr.value("sluice.client.circuit_breaker.state", "endpoint", down.addr, "state", "closed"))
	assert.Equal(t, int64(0), mr.value("sluice.client.circuit_breaker.state", "endpoint", down.addr, "state", "half_open"))
	assert.Equal(t, int64(1), mr.value("sluice.client.circuit_breaker.state", "endpoint", up.addr, "state", "closed"))
	assert.Equal(t, int64(4), mr.value("sluice.client.endpoint_policy.decisions", "endpoint", down.addr, "decision", "allowed"))
	assert.Equal(t, int64(1), mr.value("sluice.client.endpoint_policy.decisions", "endpoint", down.addr, "decision", "refused", "reason", "endpoint_policy"))
	assert.Equal(t, int64(ok), mr.value("sluice.client.endpoint_policy.decisions", "endpoint", up.addr, "decision", "allowed"))
	assert.Equal(t, int64(0), mr.value("sluice.client.endpoint_policy.decisions", "endpoint", up.addr, "decision", "refused"))
	assert.Equal(t, uint64(4), mr.count("rpc.client.call.duration", callAttrs("echo/Flaky", "Unavailable")...))
	assert.Equal(t, uint64(ok), mr.count("rpc.client.call.duration", callAttrs("echo/Flaky", "OK")...))
	n, sum := mr.hist("sluice.client.call.attempts", callAttrs("echo/Flaky", "OK")...)
	assert.Equal(t, uint64(ok), n)
	assert.Equal(t, float64(ok), sum, "a refused attempt is not an attempt sent")

	// A custom policy that panics refuses with Internal, counted apart.
	_, err = c.DisableEndpointPolicy()
	require.NoError(t, err)
	gen, err = c.SetEndpointPolicy(panicPolicy{})
	require.NoError(t, err)
	_, err = c.CallRaw(ctx, "echo/Flaky", nil)
	requireCode(t, err, protocol.CodeInternal)
	mr.collect()
	assert.Equal(t, int64(1), mr.value("sluice.client.endpoint_policy.mode", "mode", "custom"))
	assert.Equal(t, int64(gen), mr.value("sluice.client.endpoint_policy.generation"))
	assert.Equal(t, 0, mr.points("sluice.client.circuit_breaker.state"), "no breaker, no circuit")
	assert.Equal(t, int64(1), mr.value("sluice.client.endpoint_policy.decisions", "decision", "refused", "reason", "policy_panic"))
	n, sum = mr.hist("sluice.client.call.attempts", callAttrs("echo/Flaky", "Internal")...)
	assert.Equal(t, uint64(1), n)
	assert.Equal(t, float64(0), sum)
	assert.Equal(t, uint64(0), mr.count("rpc.client.request.size", callAttrs("echo/Flaky", "Internal")...), "nothing was sent")
}

type panicPolicy struct{}

func (panicPolicy) TryAcquire(string, string) spi.EndpointDecision { panic("policy bug") }
func (panicPolicy) Report(spi.AttemptOutcome, uint64)              {}

// TestMetricsReportStreams: a stream is in rpc.client.call.duration from
// NewStream to its end, by method and the code it ended with (the
// server's End is OK, a Close is Canceled), once it has ended; its sizes
// are per message and not recorded.
func TestMetricsReportStreams(t *testing.T) {
	mr := newMetricsReader(t)
	ts := startServer(t, streamMux(), server.Options{})
	c := dial(t, client.Options{MeterProvider: mr.mp}, ts.addr)
	ctx := ctxTimeout(t, 5*time.Second)

	s, err := c.NewStream(ctx, "echo/Bidi", client.StreamBidi)
	require.NoError(t, err)
	require.NoError(t, s.Send([]byte("m")))
	_, err = s.Receive()
	require.NoError(t, err)
	mr.collect()
	assert.Equal(t, uint64(0), mr.count("rpc.client.call.duration", "rpc.method", "echo/Bidi"), "the stream is still open")
	require.NoError(t, s.CloseSend())
	_, err = s.Receive()
	require.ErrorIs(t, err, io.EOF)

	closed, err := c.NewStream(ctx, "echo/Bidi", client.StreamBidi)
	require.NoError(t, err)
	require.NoError(t, closed.Close())

	mr.collect()
	assert.Equal(t, uint64(1), mr.count("rpc.client.call.duration", callAttrs("echo/Bidi", "OK")...))
	assert.Equal(t, uint64(1), mr.count("rpc.client.call.duration", callAttrs("echo/Bidi", "Canceled")...))
	assert.Equal(t, uint64(0), mr.count("rpc.client.request.size", "rpc.method", "echo/Bidi"))
}
