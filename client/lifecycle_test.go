package client_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/client"
	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/protocol/status"
	"github.com/sluicerpc/sluice/server"
)

// TestReconnectAfterServerRestart runs on synctest's clock (pipeNet), as
// do the other tests of this file whose outcome depends on time: the
// backoff, keepalive and idle intervals are short, and a slow machine must
// not stretch them.
func TestReconnectAfterServerRestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newPipeNet()
		ts := n.startServer(t, echoMux(nil), server.Options{}, "")
		addr := ts.addr
		c := n.dial(t, client.Options{Backoff: client.Backoff{Initial: 10 * time.Millisecond, Max: 50 * time.Millisecond}}, addr)
		_, err := c.CallRaw(ctxTimeout(t, 5*time.Second), "echo/Echo", []byte("before"))
		require.NoError(t, err)

		// Kill the server: listener and connections.
		ts.close(t)
		_, err = c.CallRaw(ctxTimeout(t, 2*time.Second), "echo/Echo", []byte("down"))
		requireCode(t, err, protocol.CodeUnavailable)

		// A new server on the same address: the client reconnects, once
		// the backoff of its failed dials is over (a call that does not
		// wait for readiness fails at once meanwhile).
		ts2 := n.startServer(t, echoMux(nil), server.Options{}, addr)
		out, err := c.CallRaw(ctxTimeout(t, time.Second), "echo/Echo", []byte("after"), client.WaitForReady())
		require.NoError(t, err)
		require.Equal(t, "after", string(out))
		require.Equal(t, uint64(1), ts2.srv.Stats().ConnectionsAdmitted)
	})
}

func TestCallWaitsOutBackoffWithinDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newPipeNet()
		ts := n.startServer(t, echoMux(nil), server.Options{}, "")
		c := n.dial(t, client.Options{Backoff: client.Backoff{Initial: 20 * time.Millisecond, Max: 40 * time.Millisecond}}, ts.addr)
		ts.close(t)
		synctest.Wait() // the client saw its connection close: the call is not written to it

		// The server comes back after a while; a call that waits for
		// readiness, with a generous deadline, keeps dialing, with
		// backoff, until it is back: its failed dials are not attempts.
		const down = 150 * time.Millisecond
		start := time.Now()
		srv2, err := server.New(echoMux(nil), server.Options{})
		require.NoError(t, err)
		served := make(chan error, 1)
		go func() {
			time.Sleep(down)
			l, err := n.n.Listen(ts.addr)
			if err != nil {
				served <- err
				return
			}
			served <- srv2.Serve(l)
		}()
		_, err = c.CallRaw(ctxTimeout(t, 5*time.Second), "echo/Echo", []byte("x"), client.WaitForReady())
		require.NoError(t, err)
		require.GreaterOrEqual(t, time.Since(start), down)
		require.NoError(t, srv2.Close())
		require.ErrorIs(t, <-served, server.ErrServerClosed)
	})
}

func TestCloseEndsCallsInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 10
		b := newBlocker(n)
		pn := newPipeNet()
		ts := pn.startServer(t, echoMux(map[string]server.RawHandler{"slow/Block": b.handle}), server.Options{}, "")
		defer close(b.release)
		c, err := client.Dial(ctxTimeout(t, 5*time.Second), []string{ts.addr}, client.Options{Dialer: pn.n.Dial})
		require.NoError(t, err)

		errs := make(chan error, n)
		for range n {
			go func() {
				_, err := c.CallRaw(context.Background(), "slow/Block", nil, client.Idempotent())
				errs <- err
			}()
		}
		for range n {
			recv(t, b.started)
		}
		start := time.Now()
		require.NoError(t, c.Close())
		for range n {
			err := recv(t, errs)
			requireCode(t, err, protocol.CodeCanceled)
		}
		require.Less(t, time.Since(start), time.Second)
		require.NoError(t, c.Close(), "Close is idempotent")

		_, err = c.CallRaw(ctxTimeout(t, time.Second), "echo/Echo", nil)
		requireCode(t, err, protocol.CodeCanceled)
		err = c.OneWay(ctxTimeout(t, time.Second), "echo/Echo", nil)
		requireCode(t, err, protocol.CodeCanceled)
	})
}

func TestCloseDuringTraffic(t *testing.T) {
	ts := startServer(t, echoMux(nil), server.Options{})
	c := dial(t, client.Options{}, ts.addr)
	var wg sync.WaitGroup
	var calls atomic.Int64
	traffic := make(chan struct{})
	var once sync.Once
	for range 8 {
		wg.Go(func() {
			for range 50 {
				_, err := c.CallRaw(ctxTimeout(t, 5*time.Second), "echo/Echo", []byte("x"))
				if err != nil {
					assert.Equal(t, protocol.CodeCanceled, status.Code(err), "%v", err)
					return
				}
				if calls.Add(1) == 16 {
					once.Do(func() { close(traffic) })
				}
			}
		})
	}
	recv(t, traffic) // some calls went through: Close comes during the traffic
	require.NoError(t, c.Close())
	wg.Wait()
}

func TestServerPingsAreAnswered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newPipeNet()
		ts := n.startServer(t, echoMux(nil), server.Options{KeepaliveInterval: 20 * time.Millisecond, IdleTimeout: -1}, "")
		c := n.dial(t, client.Options{}, ts.addr)
		_, err := c.CallRaw(ctxTimeout(t, 5*time.Second), "echo/Echo", nil)
		require.NoError(t, err)
		// Several keepalive intervals without a call: the server pings, we
		// answer, the connection survives.
		time.Sleep(200 * time.Millisecond)
		_, err = c.CallRaw(ctxTimeout(t, 5*time.Second), "echo/Echo", nil)
		require.NoError(t, err)
		require.Equal(t, uint64(1), ts.srv.Stats().ConnectionsAdmitted)
	})
}

func TestClientKeepalive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newPipeNet()
		ts := n.startServer(t, echoMux(nil), server.Options{KeepaliveInterval: -1, IdleTimeout: -1}, "")
		c := n.dial(t, client.Options{KeepaliveInterval: 20 * time.Millisecond}, ts.addr)
		time.Sleep(200 * time.Millisecond)
		_, err := c.CallRaw(ctxTimeout(t, 5*time.Second), "echo/Echo", nil)
		require.NoError(t, err)
		require.Equal(t, uint64(1), ts.srv.Stats().ConnectionsAdmitted, "pings were answered: no reconnect")
	})
}

func TestIdleGoAwayReconnects(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newPipeNet()
		ts := n.startServer(t, echoMux(nil), server.Options{IdleTimeout: 30 * time.Millisecond}, "")
		c := n.dial(t, client.Options{}, ts.addr)
		_, err := c.CallRaw(ctxTimeout(t, 5*time.Second), "echo/Echo", nil)
		require.NoError(t, err)
		require.Eventually(t, func() bool { return ts.srv.Stats().Connections == 0 }, 5*time.Second, 5*time.Millisecond)
		_, err = c.CallRaw(ctxTimeout(t, 5*time.Second), "echo/Echo", nil)
		require.NoError(t, err)
		require.Equal(t, uint64(2), ts.srv.Stats().ConnectionsAdmitted)
	})
}
