package client_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/client"
	"github.com/sluicerpc/sluice/kernel"
	"github.com/sluicerpc/sluice/limiters/concurrency"
	"github.com/sluicerpc/sluice/limiters/tokenbucket"
	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/server"
	"github.com/sluicerpc/sluice/spi"
)

func TestAdmissionRefusalKeepsConnection(t *testing.T) {
	b := newBlocker(1)
	ts := startServer(t, echoMux(map[string]server.RawHandler{"svc/M": b.handle}), server.Options{})
	enable(t, ts, kernel.Options{Methods: map[string]kernel.Rule{
		"svc/M": {Limits: []spi.Spec{concurrency.Spec(1)}},
	}})
	c := dial(t, client.Options{}, ts.addr)

	first := make(chan error, 1)
	go func() {
		out, err := c.CallRaw(ctxTimeout(t, 5*time.Second), "svc/M", nil)
		if err == nil && string(out) != "released" {
			err = errUnexpected(out)
		}
		first <- err
	}()
	recv(t, b.started)

	_, err := c.CallRaw(ctxTimeout(t, 5*time.Second), "svc/M", nil)
	st := requireCode(t, err, protocol.CodeResourceExhausted)
	require.Equal(t, protocol.ReasonConcurrency, st.Reason)

	close(b.release)
	require.NoError(t, recv(t, first))

	// The connection is still usable, for other methods and for svc/M.
	_, err = c.CallRaw(ctxTimeout(t, 5*time.Second), "echo/Echo", []byte("x"))
	require.NoError(t, err)
	out, err := c.CallRaw(ctxTimeout(t, 5*time.Second), "svc/M", nil)
	require.NoError(t, err)
	require.Equal(t, "released", string(out))
	require.Equal(t, uint64(1), ts.srv.Stats().ConnectionsAdmitted)
}

type errUnexpected []byte

func (e errUnexpected) Error() string { return "unexpected response " + string(e) }

// TestRateRefusalRetriesAfterHint runs on synctest's clock: the bucket
// refills after exactly its period, and the test's calls take no time, so
// the second call always finds the bucket empty and the third always finds
// it spent again.
func TestRateRefusalRetriesAfterHint(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newPipeNet()
		ts := n.startServer(t, echoMux(nil), server.Options{}, "")
		const period = 300 * time.Millisecond
		enable(t, ts, kernel.Options{Methods: map[string]kernel.Rule{
			"echo/Echo": {Limits: []spi.Spec{tokenbucket.Spec(1, 1, period)}},
		}})
		c := n.dial(t, client.Options{}, ts.addr)

		_, err := c.CallRaw(ctxTimeout(t, 5*time.Second), "echo/Echo", []byte("1"))
		require.NoError(t, err)

		// The bucket is empty: the server refuses with a hint, the client
		// waits for it and the retry succeeds within the deadline.
		start := time.Now()
		out, err := c.CallRaw(ctxTimeout(t, 5*time.Second), "echo/Echo", []byte("2"))
		require.NoError(t, err)
		require.Equal(t, "2", string(out))
		require.Greater(t, time.Since(start), period/3, "the client waited for the hint")
		require.Equal(t, uint64(1), ts.srv.Stats().Refusals["rate"])

		// With a deadline shorter than the hint, the client gives up with
		// the refusal instead of waiting in vain.
		start = time.Now()
		_, err = c.CallRaw(ctxTimeout(t, period/10), "echo/Echo", []byte("3"))
		st := requireCode(t, err, protocol.CodeResourceExhausted)
		require.Equal(t, protocol.ReasonRate, st.Reason)
		require.Positive(t, st.RetryAfter)
		require.Less(t, time.Since(start), period)

		// MaxAttempts(1) returns the refusal at once.
		_, err = c.CallRaw(ctxTimeout(t, 5*time.Second), "echo/Echo", []byte("4"), client.MaxAttempts(1))
		requireCode(t, err, protocol.CodeResourceExhausted)
	})
}

func TestRateRefusalPrefersAnotherEndpoint(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newPipeNet()
		a := n.startServer(t, echoMux(nil), server.Options{}, "")
		b := n.startServer(t, echoMux(nil), server.Options{}, "")
		for _, ts := range []*testServer{a, b} {
			enable(t, ts, kernel.Options{Methods: map[string]kernel.Rule{
				"echo/Echo": {Limits: []spi.Spec{tokenbucket.Spec(1, 1, time.Hour)}},
			}})
		}
		c := n.dial(t, client.Options{}, a.addr, b.addr)
		ctx := ctxTimeout(t, 5*time.Second)
		// Two tokens in total, one per server: both calls succeed at once,
		// the refused attempt moving to the other endpoint without
		// waiting (on synctest's clock: no time passes at all).
		for range 2 {
			start := time.Now()
			_, err := c.CallRaw(ctx, "echo/Echo", []byte("x"))
			require.NoError(t, err)
			require.Zero(t, time.Since(start))
		}
		_, err := c.CallRaw(ctx, "echo/Echo", []byte("x"))
		requireCode(t, err, protocol.CodeResourceExhausted)
	})
}

func enable(t testing.TB, ts *testServer, o kernel.Options) {
	t.Helper()
	_, err := ts.srv.Admission().Enable(o)
	require.NoError(t, err)
}
