package client_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/client"
	"github.com/sluicerpc/sluice/protocol"
)

// TestStreamFramesFromAServerAreViolations: the client offers
// CapStreaming, but this server (fakeServer) did not announce it, so
// streaming was not negotiated: a server that answers a call with a
// stream frame (Message, End, WindowUpdate) commits a protocol violation:
// the connection closes, the call fails Unavailable, and the next call
// gets a fresh connection.
func TestStreamFramesFromAServerAreViolations(t *testing.T) {
	for name, frame := range map[string]func(id uint64) []byte{
		"Message": func(id uint64) []byte {
			f, _ := protocol.AppendMessage(nil, id, &protocol.Message{Body: []byte("x")})
			return f
		},
		"End": func(id uint64) []byte {
			f, _ := protocol.AppendEnd(nil, id, &protocol.End{})
			return f
		},
		"WindowUpdate": func(uint64) []byte {
			f, _ := protocol.AppendWindowUpdate(nil, 0, &protocol.WindowUpdate{Returned: 1})
			return f
		},
	} {
		t.Run(name, func(t *testing.T) {
			fs := startFakeServer(t, func(conn int, id uint64, w func([]byte)) {
				if conn == 0 {
					w(frame(id))
					return
				}
				f, _ := protocol.AppendResponse(nil, id, &protocol.Response{Body: []byte("ok")})
				w(f)
			})
			c := dial(t, client.Options{}, fs.addr)
			_, err := c.CallRaw(ctxTimeout(t, 10*time.Second), "svc/M", nil)
			requireCode(t, err, protocol.CodeUnavailable)
			out, err := c.CallRaw(ctxTimeout(t, 10*time.Second), "svc/M", nil)
			require.NoError(t, err)
			assert.Equal(t, "ok", string(out))
		})
	}
}
