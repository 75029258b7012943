package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/protocol/status"
	"github.com/sluicerpc/sluice/server"
)

// A reason on the wire says that the server refused a call without
// running it; a handler ran, so the reason its status error carries is
// dropped, while its code, message and retry hint go through.
func TestHandlerErrorReasonIsNotSent(t *testing.T) {
	mux := server.NewMux()
	mux.HandleRaw("h", "Claim", func(context.Context, []byte) ([]byte, error) {
		return nil, &status.Error{Code: protocol.CodeUnavailable, Message: "pretends it never ran", Reason: "draining", RetryAfter: time.Second}
	})
	_, addr := serveMux(t, mux)
	c := dialRaw(t, addr)
	r := c.call("h", "Claim", nil)
	require.NotNil(t, r.err)
	assert.Equal(t, protocol.CodeUnavailable, r.err.Code)
	assert.Equal(t, "pretends it never ran", r.err.Message)
	assert.Equal(t, time.Second, r.err.RetryAfter)
	assert.Empty(t, r.err.Reason)
}
