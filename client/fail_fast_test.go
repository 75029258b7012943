package client_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/client"
	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/server"
)

// TestCallsFailFastWhenTheConnectionIsGone: once the server is gone and a
// dial failed, calls to it fail at once with Unavailable (the dial's
// error), instead of each waiting for the endpoint's backoff until its
// own timeout ends it with DeadlineExceeded. Over TCP loopback.
func TestCallsFailFastWhenTheConnectionIsGone(t *testing.T) {
	ts := startServer(t, echoMux(nil), server.Options{})
	c := dial(t, client.Options{Backoff: client.Backoff{Initial: 2 * time.Second, Max: 5 * time.Second}}, ts.addr)
	_, err := c.CallRaw(ctxTimeout(t, 5*time.Second), "echo/Echo", nil)
	require.NoError(t, err)
	ts.close(t)

	for i := range 10 {
		start := time.Now()
		_, err := c.CallRaw(ctxTimeout(t, time.Second), "echo/Echo", nil)
		elapsed := time.Since(start)
		st := requireCode(t, err, protocol.CodeUnavailable)
		assert.Contains(t, st.Message, ts.addr)
		assert.Less(t, elapsed, 500*time.Millisecond, "call %d waited (%v)", i, elapsed)
		err = c.OneWay(ctxTimeout(t, time.Second), "echo/Echo", nil)
		requireCode(t, err, protocol.CodeUnavailable)
	}
}

// TestWaitForReadyWaitsForTheBackoff: on synctest's clock, a call that
// waits for readiness waits for the endpoint's backoff and dials again
// until the server is back, within its deadline, however many dials fail;
// the same call without the option fails at once.
func TestWaitForReadyWaitsForTheBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newPipeNet()
		ts := n.startServer(t, echoMux(nil), server.Options{}, "")
		c := n.dial(t, client.Options{MaxAttempts: 1, Backoff: client.Backoff{Initial: 100 * time.Millisecond, Max: 100 * time.Millisecond}}, ts.addr)
		ts.close(t)
		_, err := c.CallRaw(ctxTimeout(t, time.Second), "echo/Echo", nil)
		requireCode(t, err, protocol.CodeUnavailable) // the dial fails: backing off now

		start := time.Now()
		_, err = c.CallRaw(ctxTimeout(t, 5*time.Second), "echo/Echo", nil)
		requireCode(t, err, protocol.CodeUnavailable)
		assert.Zero(t, time.Since(start), "without WaitForReady the call does not wait for the backoff")

		back := make(chan *testServer, 1)
		go func() {
			time.Sleep(time.Second) // ten backoffs
			back <- n.startServer(t, echoMux(nil), server.Options{}, ts.addr)
		}()
		_, err = c.CallRaw(ctxTimeout(t, 5*time.Second), "echo/Echo", []byte("x"), client.WaitForReady())
		require.NoError(t, err)
		assert.GreaterOrEqual(t, time.Since(start), time.Second)

		// Within its deadline only: the context's error.
		(<-back).close(t)
		synctest.Wait() // the client saw its connection close
		_, err = c.CallRaw(ctxTimeout(t, time.Second), "echo/Echo", nil, client.WaitForReady())
		requireCode(t, err, protocol.CodeDeadlineExceeded)
	})
}
