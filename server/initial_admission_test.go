package server_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/kernel"
	"github.com/sluicerpc/sluice/limiters/concurrency"
	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/server"
	"github.com/sluicerpc/sluice/spi"
)

// Options.Admission is in force before Serve accepts its first
// connection: the very first requests are admitted by it.
func TestInitialAdmissionGovernsTheFirstRequests(t *testing.T) {
	first := holdRule(1)
	s := startServer(t, server.Options{Admission: &first})
	assert.EqualValues(t, 1, s.Admission().Generation())
	c := dialRaw(t, s.addr)
	held := c.send("echo", "Hold", nil, nil)
	<-s.mux.entered
	r := c.call("echo", "Hold", nil)
	require.NotNil(t, r.err, "the second request on the first connection is admitted by the initial policy")
	assert.Equal(t, protocol.CodeResourceExhausted, r.err.Code)
	assert.Equal(t, "concurrency", r.err.Reason)
	close(s.mux.block)
	<-s.mux.ctxErr
	assert.Equal(t, held, c.next().id)
	requireLedgerZero(t, s)
}

// Options the kernel rejects make New fail, naming the field.
func TestInvalidInitialAdmissionFailsNew(t *testing.T) {
	bad := kernel.Options{Methods: map[string]kernel.Rule{"echo/Nope": {Limits: []spi.Spec{concurrency.Spec(1)}}}}
	_, err := server.New(newTestMux(newHandlers()), server.Options{Admission: &bad})
	require.ErrorContains(t, err, "Options.Admission")
	require.ErrorContains(t, err, "echo/Nope")
}
