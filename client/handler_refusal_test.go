package client_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/client"
	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/protocol/status"
	"github.com/sluicerpc/sluice/server"
)

// A handler that ran and answered ResourceExhausted with a retry hint (its
// own downstream quota, say), or Unavailable with a reason it made up, is
// not run again for a method that is not idempotent: only a refusal with a
// reason (the server's, which never ran the handler) is safe to send again.
// An idempotent call is retried after the hint.
func TestHandlerResourceExhaustedIsNotRetried(t *testing.T) {
	var runs atomic.Int64
	mux := server.NewMux()
	mux.HandleRaw("busy", "Quota", func(context.Context, []byte) ([]byte, error) {
		runs.Add(1)
		return nil, &status.Error{Code: protocol.CodeResourceExhausted, Message: "downstream quota", RetryAfter: time.Millisecond}
	})
	mux.HandleRaw("busy", "Stopping", func(context.Context, []byte) ([]byte, error) {
		runs.Add(1)
		return nil, &status.Error{Code: protocol.CodeUnavailable, Message: "made up", Reason: "draining"}
	})
	a := startServer(t, mux, server.Options{})
	b := startServer(t, mux, server.Options{})
	c := dial(t, client.Options{MaxAttempts: 3}, a.addr, b.addr)
	ctx := ctxTimeout(t, 10*time.Second)

	for _, method := range []string{"busy/Quota", "busy/Stopping"} {
		runs.Store(0)
		_, err := c.CallRaw(ctx, method, nil)
		require.Error(t, err)
		assert.EqualValues(t, 1, runs.Load(), "%s: the handler ran again for a call that is not idempotent", method)
		st, ok := status.FromError(err)
		require.True(t, ok)
		assert.Empty(t, st.Reason, "%s: a handler's error carries no reason", method)
	}

	runs.Store(0)
	_, err := c.CallRaw(ctx, "busy/Quota", nil, client.Idempotent())
	requireCode(t, err, protocol.CodeResourceExhausted)
	assert.EqualValues(t, 3, runs.Load(), "an idempotent call is retried after the hint")
}
