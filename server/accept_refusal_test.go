package server_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/protocol"
)

// perAddressRefusal is the message of a refusal at the per-address
// handshake bound.
const perAddressRefusal = "the server is at its limit of connections in handshake from your address"

// requireRefusedAtAccept checks that a plaintext server refused c at
// accept: a connection-level Unavailable Error (no reason: no call was
// refused) whose message names the bound, then the close.
func requireRefusedAtAccept(t *testing.T, c *rawClient, message string) {
	t.Helper()
	e := c.expectClosed()
	require.NotNil(t, e, "a connection refused at accept is told why before the close")
	assert.Equal(t, protocol.CodeUnavailable, e.Code)
	assert.Empty(t, e.Reason)
	assert.Contains(t, e.Message, message)
}
