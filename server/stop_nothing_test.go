package server_test

import (
	"context"
	"net"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/server"
)

// A Stop with nothing left to wait for succeeds even when its context has
// already ended: completion wins over the deadline, so `sluice serve
// -stop-timeout 1ns` with no call in flight does not report an incomplete
// drain.
func TestStopWithNothingToWaitForSucceedsWhateverItsContext(t *testing.T) {
	srv, err := server.New(newTestMux(newHandlers()), server.Options{})
	require.NoError(t, err)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	c := dialRaw(t, l.Addr().String())
	require.Nil(t, c.call("echo", "Say", []byte("x")).err)
	_ = c.nc.Close()
	require.NoError(t, l.Close())
	require.Error(t, <-served) // the loop has returned: nothing is serving
	require.Eventually(t, func() bool { return srv.Stats().Connections == 0 }, 10e9, 1e6)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for range 100 {
		require.NoError(t, srv.Stop(ctx))
	}
}
