package servertest_test

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/server/servertest"
)

func TestNetwork(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := servertest.NewNetwork()
		l, err := n.Listen("")
		require.NoError(t, err)
		addr := l.Addr().String()
		assert.Equal(t, "pipe-1", addr)
		_, err = n.Listen(addr)
		assert.True(t, errors.Is(err, syscall.EADDRINUSE), "%v", err)

		accepted := make(chan net.Conn, 1)
		go func() {
			c, err := l.Accept()
			assert.NoError(t, err)
			accepted <- c
		}()
		c, err := n.Dial(context.Background(), addr)
		require.NoError(t, err)
		s := <-accepted
		go func() { _, _ = s.Write([]byte("hi")); _ = s.Close() }()
		got, err := io.ReadAll(c)
		require.NoError(t, err)
		assert.Equal(t, "hi", string(got))
		require.NoError(t, c.Close())

		// A dial that nobody accepts waits, within its context.
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err = n.Dial(ctx, addr)
		assert.ErrorIs(t, err, context.DeadlineExceeded)

		// Closed: refused, as a closed port; the address is free again.
		require.NoError(t, l.Close())
		_, err = l.Accept()
		assert.ErrorIs(t, err, net.ErrClosed)
		_, err = n.Dial(context.Background(), addr)
		assert.ErrorIs(t, err, syscall.ECONNREFUSED)
		assert.ErrorContains(t, err, "connection refused")
		_, err = n.Dial(context.Background(), "nowhere")
		assert.ErrorIs(t, err, syscall.ECONNREFUSED)
		l2, err := n.Listen(addr)
		require.NoError(t, err)
		require.NoError(t, l2.Close())
	})
}
