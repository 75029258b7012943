//go:build !race

// The race detector makes sync.Pool drop items at random: allocation
// counts are only meaningful without it.

package client_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/client"
	"github.com/sluicerpc/sluice/server"
)

// TestACallWithMetricsAllocatesLikeOneWithout: in steady state a unary
// call recorded through an SDK MeterProvider allocates exactly what the
// same call without one does (the response body the caller owns): the
// method's attribute sets are cached and the recording allocates nothing.
func TestACallWithMetricsAllocatesLikeOneWithout(t *testing.T) {
	ts := startServer(t, echoMux(nil), server.Options{})
	without := dial(t, client.Options{}, ts.addr)
	with := dial(t, client.Options{MeterProvider: newMetricsReader(t).mp}, ts.addr)
	ctx := ctxTimeout(t, time.Minute)
	req := []byte("ping")
	perCall := func(c *client.Client) float64 {
		call := func() {
			if _, err := c.CallRaw(ctx, "echo/Echo", req); err != nil {
				t.Fatal(err)
			}
		}
		call() // the first call of the method builds its row and series
		return testing.AllocsPerRun(2000, call)
	}
	base := perCall(without)
	require.Positive(t, base, "a call allocates its response")
	assert.Equal(t, base, perCall(with))
}
