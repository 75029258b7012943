package server_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/server"
)

// TestStreamsThatWereNotNegotiatedAreViolations: the server announces
// CapStreaming, but a client that did not announce it too has no
// streams: a Request that opens a stream, and every stream frame, is a
// protocol violation that closes the connection (docs/streaming.md);
// none of them is run as a unary call.
func TestStreamsThatWereNotNegotiatedAreViolations(t *testing.T) {
	s := startServer(t, server.Options{})
	ack := dialRaw(t, s.addr).ack
	assert.True(t, ack.Capabilities.Has(protocol.CapStreaming), "the server announces CapStreaming")
	frames := map[string]func(c *rawClient) []byte{
		"Request with Stream": func(c *rawClient) []byte {
			si, mi := c.method("echo", "Say")
			f, err := protocol.AppendRequest(nil, 1, &protocol.Request{Service: si, Method: mi, Stream: true, HasMessage: true, Body: []byte("x")})
			require.NoError(t, err)
			return f
		},
		"Message": func(*rawClient) []byte {
			f, err := protocol.AppendMessage(nil, 1, &protocol.Message{Body: []byte("x")})
			require.NoError(t, err)
			return f
		},
		"End": func(*rawClient) []byte {
			f, err := protocol.AppendEnd(nil, 1, &protocol.End{})
			require.NoError(t, err)
			return f
		},
		"WindowUpdate": func(*rawClient) []byte {
			f, err := protocol.AppendWindowUpdate(nil, 0, &protocol.WindowUpdate{Returned: 1})
			require.NoError(t, err)
			return f
		},
	}
	violations := s.Stats().ProtocolViolations
	for name, frame := range frames {
		c := dialRaw(t, s.addr) // no CapStreaming from this client
		c.write(frame(c))
		e := c.expectClosed()
		require.NotNil(t, e, "%s: a connection Error before the close", name)
		assert.Contains(t, e.Message, "protocol violation", name)
		violations++
		assert.Equal(t, violations, s.Stats().ProtocolViolations, name)
	}
	assert.Zero(t, s.Stats().Calls, "no stream request ran as a unary call")
	requireLedgerZero(t, s)
}
