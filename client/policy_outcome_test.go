package client_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/client"
	"github.com/sluicerpc/sluice/server"
	"github.com/sluicerpc/sluice/spi"
)

// TestOneWaySuccessObservesNoResponse: a one-way call that was written is
// a success, but no Response or Error frame arrives for it, so the policy
// is told ResponseObserved false (spi.AttemptOutcome); a unary success
// observed its Response.
func TestOneWaySuccessObservesNoResponse(t *testing.T) {
	ts := startServer(t, echoMux(nil), server.Options{})
	c := dial(t, client.Options{}, ts.addr)
	p := newRecording("p")
	_, err := c.SetEndpointPolicy(p)
	require.NoError(t, err)

	require.NoError(t, c.OneWay(ctxTimeout(t, 5*time.Second), "echo/Echo", []byte("x")))
	_, err = c.CallRaw(ctxTimeout(t, 5*time.Second), "echo/Echo", []byte("y"))
	require.NoError(t, err)

	_, reports := p.snapshot()
	require.Len(t, reports, 2)
	assert.Equal(t, spi.OutcomeSuccess, reports[0].outcome.Kind)
	assert.False(t, reports[0].outcome.ResponseObserved, "one-way: no Response or Error frame arrives")
	assert.Equal(t, spi.OutcomeSuccess, reports[1].outcome.Kind)
	assert.True(t, reports[1].outcome.ResponseObserved, "unary: the Response arrived")
	p.requireExactlyOnce(t)
}
