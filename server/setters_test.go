package server_test

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/server"
)

// A client that connects after SetCallCapacity is told the new
// per-connection capacity in its handshake.
func TestHandshakeAdvertisesTheCallCapacityInForce(t *testing.T) {
	s := startServer(t, server.Options{Calls: server.CallCapacity{PerConnection: 3, PerServer: 10}})
	assert.EqualValues(t, 3, dialRaw(t, s.addr).ack.MaxConcurrentCalls)
	require.NoError(t, s.SetCallCapacity(server.CallCapacity{PerConnection: 5, PerServer: 20}))
	assert.Equal(t, server.CallCapacity{PerConnection: 5, PerServer: 20}, s.CallCapacity())
	assert.EqualValues(t, 5, dialRaw(t, s.addr).ack.MaxConcurrentCalls)
}

// Concurrent SetCallCapacity calls never leave a mix of two values: what
// the getter reports, what is enforced and what new clients are told all
// come from one call.
func TestConcurrentSetCallCapacityNeverMixes(t *testing.T) {
	s := startServer(t, server.Options{})
	a := server.CallCapacity{PerConnection: 1, PerServer: 1}
	b := server.CallCapacity{PerConnection: 7, PerServer: 70}
	for range 200 {
		var wg sync.WaitGroup
		wg.Go(func() { require.NoError(t, s.SetCallCapacity(a)) })
		wg.Go(func() { require.NoError(t, s.SetCallCapacity(b)) })
		wg.Wait()
		got := s.CallCapacity()
		require.Contains(t, []server.CallCapacity{a, b}, got)
		perConn, perServer := server.EnforcedCallCapacity(s.Server)
		require.Equal(t, got.PerConnection, perConn, "enforced per connection")
		require.Equal(t, got.PerServer, perServer, "enforced per server")
	}
	assert.EqualValues(t, s.CallCapacity().PerConnection, dialRaw(t, s.addr).ack.MaxConcurrentCalls)
}

func TestConnectionLimitsGetter(t *testing.T) {
	s := startServer(t, server.Options{})
	assert.Equal(t, server.ConnectionLimits{MaxConnections: 1024, MaxHandshakes: 64, MaxHandshakesPerAddress: 8}, s.ConnectionLimits())
	require.NoError(t, s.SetConnectionLimits(server.ConnectionLimits{MaxConnections: 10, MaxHandshakes: 4}))
	assert.Equal(t, server.ConnectionLimits{MaxConnections: 10, MaxHandshakes: 4, MaxHandshakesPerAddress: 4}, s.ConnectionLimits())
	require.Error(t, s.SetConnectionLimits(server.ConnectionLimits{MaxConnections: 2, MaxHandshakes: 4}))
	assert.Equal(t, server.ConnectionLimits{MaxConnections: 10, MaxHandshakes: 4, MaxHandshakesPerAddress: 4}, s.ConnectionLimits(), "a rejected change changes nothing")
}
