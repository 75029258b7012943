package server_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/sluicerpc/sluice/server"
)

// A client that holds its HandshakeAck no longer holds a handshake slot:
// the server gives the slot back before it writes the ack, so a client
// that reconnects (or a second one, with one slot) right after its
// handshake is never refused for its own slot. Before, the slot was given
// back after the write, and a client quick enough was refused at the
// handshake bound (seen as "connection reset" in a loaded test run).
func TestTheHandshakeSlotIsFreeOnceTheAckIsWritten(t *testing.T) {
	s := startServer(t, server.Options{Connections: server.ConnectionLimits{MaxConnections: 10, MaxHandshakes: 1}})
	atAck := make(chan int, 3)
	server.SetTestHooks(s.Server, &server.TestHooks{AfterAck: func() { atAck <- s.Stats().Handshakes }})
	for range 3 {
		dialRaw(t, s.addr) // each one needs the only handshake slot
		assert.Zero(t, <-atAck, "handshake slots held once the ack was written")
	}
	assert.Zero(t, s.Stats().RefusedHandshakeLimit)
}
