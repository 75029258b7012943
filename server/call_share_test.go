package server_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/server"
)

// TestConnectionsThatHoldTheServerGiveWayToNewOnes (issue 25 section 2):
// two connections hold all of a server's 8 call slots with streams that
// never end (4 each, their bound). A third connection is refused while the
// server is full; when one of the holders' streams ends, that holder is
// refused the freed slot (it holds more than its share of 8 / 3) and the
// newcomer gets it. Before, whoever asked first got it: a few connections
// re-opening streams kept every other client out.
func TestConnectionsThatHoldTheServerGiveWayToNewOnes(t *testing.T) {
	s := startServer(t, server.Options{Calls: server.CallCapacity{PerConnection: 4, PerServer: 8}})
	h := s.mux.st
	a, b := dialStream(t, s.addr), dialStream(t, s.addr)
	var held []uint64
	for _, c := range []*rawClient{a, b} {
		for range 4 {
			held = append(held, c.open("stream", "Hold", nil, false))
			<-h.entered
		}
	}
	newcomer := dialStream(t, s.addr)
	refusal := func(c *rawClient) *protocol.ErrorFrame {
		t.Helper()
		id := c.open("stream", "Hold", nil, false)
		return c.nextError(id)
	}
	e := refusal(newcomer)
	assert.Equal(t, protocol.CodeResourceExhausted, e.Code)
	assert.Equal(t, "call_capacity", e.Reason)
	assert.Contains(t, e.Message, "server", "full: the server's bound refuses")

	a.cancel(held[0])
	assert.Equal(t, protocol.CodeCanceled, a.nextError(held[0]).Code)
	require.Eventually(t, func() bool { return s.Stats().ServerCalls.Active == 7 }, 10*time.Second, time.Millisecond)
	e = refusal(a)
	assert.Equal(t, "call_capacity", e.Reason)
	assert.Contains(t, e.Message, "fair share", "a holds 3 of 8 with 3 connections: over its share")

	newcomer.open("stream", "Hold", nil, false)
	select {
	case <-h.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the newcomer's stream did not get the freed slot")
	}
	assert.Equal(t, 8, s.Stats().ServerCalls.Active)
	assert.Equal(t, uint64(2), s.Stats().Refusals["call_capacity"], "the newcomer once, a once")
}
