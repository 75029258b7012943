package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/kernel"
	"github.com/sluicerpc/sluice/kernel/governor"
	"github.com/sluicerpc/sluice/limiters/concurrency"
	"github.com/sluicerpc/sluice/limiters/tokenbucket"
	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/server"
	"github.com/sluicerpc/sluice/spi"
)

// ledgerOptions put every call under a global concurrency permit, and
// OneWay under a spent token bucket, so that every path holds or is
// refused something.
func ledgerOptions() kernel.Options {
	return kernel.Options{
		Global: kernel.Rule{Limits: []spi.Spec{concurrency.Spec(1000)}},
		Methods: map[string]kernel.Rule{
			"echo/OneWay": {Limits: []spi.Spec{tokenbucket.Spec(1, 1, time.Hour)}},
			"echo/Hold":   {Limits: []spi.Spec{concurrency.Spec(1)}},
		},
	}
}

// TestEveryEndReturnsEveryPermit runs each way a call can end, with
// admission enabled and a call capacity, and checks after each that every
// permit and reservation came back.
func TestEveryEndReturnsEveryPermit(t *testing.T) {
	s := startServer(t, server.Options{Calls: server.CallCapacity{PerConnection: 1, PerServer: 100}})
	_, err := s.Admission().Enable(ledgerOptions())
	require.NoError(t, err)
	oneWay := func(r *protocol.Request) { r.OneWay, r.Cancellable = true, false }

	ends := []struct {
		name string
		run  func(t *testing.T, c *rawClient)
	}{
		{"success", func(t *testing.T, c *rawClient) { require.Nil(t, c.call("echo", "Say", nil).err) }},
		{"handler error", func(t *testing.T, c *rawClient) { require.NotNil(t, c.call("echo", "Fail", nil).err) }},
		{"handler panic", func(t *testing.T, c *rawClient) {
			assert.Equal(t, protocol.CodeInternal, c.call("echo", "Panic", nil).err.Code)
		}},
		{"undecodable body", func(t *testing.T, c *rawClient) {
			assert.Equal(t, protocol.CodeInvalidArgument, c.call("typed", "Echo", []byte("{")).err.Code)
		}},
		{"cancel", func(t *testing.T, c *rawClient) {
			id := c.send("echo", "Hold", nil, nil)
			<-s.mux.entered
			f, _ := protocol.AppendCancel(nil, id, protocol.CancelCaller)
			c.write(f)
			<-s.mux.ctxErr
			assert.Equal(t, protocol.CodeCanceled, c.next().err.Code)
		}},
		{"deadline", func(t *testing.T, c *rawClient) {
			c.send("echo", "Hold", nil, func(r *protocol.Request) { r.HasBudget, r.Budget = true, 20*time.Millisecond })
			<-s.mux.entered
			<-s.mux.ctxErr
			assert.Equal(t, protocol.CodeDeadlineExceeded, c.next().err.Code)
		}},
		{"connection closed by the client", func(t *testing.T, c *rawClient) {
			c.send("echo", "Hold", nil, nil)
			<-s.mux.entered
			_ = c.nc.Close()
			assert.ErrorIs(t, <-s.mux.ctxErr, context.Canceled)
		}},
		{"admission refusal", func(t *testing.T, c *rawClient) {
			c.send("echo", "Hold", nil, nil)
			<-s.mux.entered
			r := c.call("echo", "Hold", nil) // Hold's limit is 1
			assert.Equal(t, protocol.CodeResourceExhausted, r.err.Code)
			assert.Equal(t, "concurrency", r.err.Reason)
			s.mux.block <- struct{}{}
			<-s.mux.ctxErr
			c.next()
		}},
		{"capacity refusal", func(t *testing.T, c *rawClient) {
			c.send("echo", "Hold", nil, nil)
			<-s.mux.entered
			r := c.call("echo", "Say", nil) // one call per connection
			assert.Equal(t, governor.CallCapacityReason, r.err.Reason)
			s.mux.block <- struct{}{}
			<-s.mux.ctxErr
			c.next()
		}},
		{"one-way drop", func(t *testing.T, c *rawClient) {
			c.send("echo", "OneWay", nil, oneWay)
			<-s.mux.oneWay
			requireLedgerZero(t, s)
			c.send("echo", "OneWay", nil, oneWay) // the bucket is spent: dropped
			require.Nil(t, c.call("echo", "Say", nil).err)
			assert.Equal(t, uint64(1), s.Stats().OneWayDropped)
		}},
	}
	for _, end := range ends {
		t.Run(end.name, func(t *testing.T) {
			c := dialRaw(t, s.addr)
			end.run(t, c)
			requireLedgerZero(t, s)
		})
	}

	t.Run("stop", func(t *testing.T) {
		c := dialRaw(t, s.addr)
		c.send("echo", "Hold", nil, nil)
		<-s.mux.entered
		stopped := make(chan error, 1)
		go func() { stopped <- s.Stop(context.Background()) }()
		for h, _ := c.read(); h.Type != protocol.FrameGoAway; h, _ = c.read() {
		}
		s.mux.block <- struct{}{}
		<-s.mux.ctxErr
		require.NoError(t, <-stopped)
		requireLedgerZero(t, s)
		assert.True(t, s.Stats().Admission.Sealed)
	})
}
