package server_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/kernel"
	"github.com/sluicerpc/sluice/limiters/concurrency"
	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/server"
	"github.com/sluicerpc/sluice/spi"
)

// A serving server gives back idle partition keys when no new key
// arrives: its periodic run of the kernel's ReclaimIdle reclaims them
// once IdleTimeout has passed on the admission clock (issue 37: reclaim
// ran only when a new key arrived). The wait is bounded by a one-minute
// guard, not measured: the run comes every second.
func TestAServerReclaimsIdleKeysWithoutNewKeys(t *testing.T) {
	clock := &manualClock{now: time.Unix(1_000_000, 0)}
	s := startServer(t, server.Options{Clock: clock})
	byHeader := kernel.Selector{Name: "header", Version: 1, Key: func(f kernel.Facts) (string, bool) {
		if f.Metadata == nil {
			return "", false
		}
		return f.Metadata.Get("tenant")
	}}
	_, err := s.Admission().Enable(kernel.Options{Partition: &kernel.PartitionPolicy{
		Selector: byHeader, MaxPartitions: 100, IdleTimeout: time.Minute,
		Rule: kernel.Rule{Limits: []spi.Spec{concurrency.Spec(1)}},
	}})
	require.NoError(t, err)
	c := dialRaw(t, s.addr)
	const keys = 20
	for i := range keys {
		id := c.send("echo", "Say", nil, func(r *protocol.Request) {
			require.NoError(t, r.Metadata.Add("tenant", fmt.Appendf(nil, "t%d", i)))
		})
		r := c.next()
		require.Equal(t, id, r.id)
		require.Nil(t, r.err)
	}
	keysNow := func() int64 {
		ps, ok := s.Stats().Admission.Partition("partition:header@v1")
		require.True(t, ok)
		return ps.Keys
	}
	require.EqualValues(t, keys, keysNow())

	clock.advance(time.Minute)
	deadline := time.Now().Add(time.Minute)
	for keysNow() != 0 {
		require.True(t, time.Now().Before(deadline), "%d idle keys still there a minute later", keysNow())
		time.Sleep(10 * time.Millisecond)
	}
	requireLedgerZero(t, s)
}
