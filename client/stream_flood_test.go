package client_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/client"
	"github.com/sluicerpc/sluice/kernel/governor"
	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/protocol/status"
	"github.com/sluicerpc/sluice/server"
)

// TestAStreamFloodIsBoundedByCallCapacity: a client opens 40 bidi streams
// and abandons them without a word, against a server whose per-connection
// call capacity is 8: 8 are held open, every other one is refused with
// call_capacity, and once the client closes them all the server holds
// nothing and serves the next call.
func TestAStreamFloodIsBoundedByCallCapacity(t *testing.T) {
	ts := startServer(t, streamMux(), server.Options{Calls: server.CallCapacity{PerConnection: 8}})
	c := dial(t, client.Options{}, ts.addr)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var streams []*client.Stream
	for range 40 {
		s, err := c.NewStream(ctx, "echo/Bidi", client.StreamBidi)
		require.NoError(t, err)
		streams = append(streams, s)
	}
	require.Eventually(t, func() bool {
		st := ts.srv.Stats()
		return st.Refusals[governor.CallCapacityReason] == 32
	}, 10*time.Second, time.Millisecond, "%+v", ts.srv.Stats().Refusals)
	st := ts.srv.Stats()
	assert.LessOrEqual(t, st.ServerCalls.Active+st.ServerCalls.Reserved, 8)
	refused := 0
	for _, s := range streams[8:] {
		_, err := s.Receive()
		if e, ok := status.FromError(err); ok && e.Code == protocol.CodeResourceExhausted {
			refused++
		}
	}
	assert.Equal(t, 32, refused)
	for _, s := range streams {
		_ = s.Close()
	}
	require.Eventually(t, func() bool {
		st := ts.srv.Stats()
		return st.ServerCalls.Active == 0 && st.ServerCalls.Reserved == 0 && st.Governor.Stream.Used == 0
	}, 10*time.Second, time.Millisecond, "%+v", ts.srv.Stats())
	out, err := c.CallRaw(ctxTimeout(t, 10*time.Second), "echo/Echo", []byte("after"))
	require.NoError(t, err)
	assert.Equal(t, "after", string(out))
}
