package server_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/server"
)

// A socket that never sends its Handshake does not hold a graceful Stop
// for the whole handshake timeout (a minute here): when Stop begins, a
// connection still in its handshake has a second to finish it. A client
// that does finish within it gets its HandshakeAck and the GoAway. On
// synctest's clock, so the second is exact.
func TestStopGivesConnectionsInHandshakeASecond(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := startPipeServer(t, server.Options{HandshakeTimeout: time.Minute, KeepaliveInterval: -1, IdleTimeout: -1})
		silent := s.dialNoHandshake(t)
		late := s.dialNoHandshake(t)
		synctest.Wait()
		require.Equal(t, 2, s.Stats().Handshakes)

		start := time.Now()
		stopped := make(chan error, 1)
		go func() { stopped <- s.Stop(context.Background()) }()
		synctest.Wait()

		// The late client handshakes half a second into Stop.
		time.Sleep(500 * time.Millisecond)
		late.handshake(nil)
		h, _ := late.read()
		assert.Equal(t, protocol.FrameGoAway, h.Type, "the late client gets the GoAway")

		require.NoError(t, <-stopped)
		assert.Equal(t, time.Second, time.Since(start), "Stop waited for the silent socket")
		silent.expectClosed()
		assert.Zero(t, s.Stats().Connections)
		assert.Zero(t, s.Stats().Handshakes)
	})
}
