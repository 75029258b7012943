package server_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/codecs"
	"github.com/sluicerpc/sluice/kernel/governor"
	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/server"
)

// TestAConnectionOverItsShareOfTheDecodedBudgetGivesWay (issue 25 section
// 2, decoded-bytes starvation): a decoded-bytes budget of 400 KiB shared by
// two connections (200 KiB each). Connection a's decodes, held, take 300
// KiB while the budget has room; its next request, which would leave less
// than a quarter free, is refused decoded_bytes (it is over its share),
// while b's request of the same size, under its share, is decoded. Before,
// whoever asked first got the last of the budget: a few connections
// sending bombs starved everyone's compressed calls.
func TestAConnectionOverItsShareOfTheDecodedBudgetGivesWay(t *testing.T) {
	s := startInstrumented(t, server.Options{Governor: governor.Limits{DecodedBytes: 400 << 10, Decodes: 8}})
	g := holdDecodes(s.testServer)
	a, b := s.dial(t), s.dial(t)
	send := func(c *rawClient, n int) uint64 {
		body := compressible(n)
		return c.send("echo", "Say", compress(t, codecs.Zstd(), body), compressed(c.codecID("zstd"), n))
	}
	held := []uint64{send(a, 150<<10)}
	g.await(t)
	held = append(held, send(a, 150<<10))
	g.await(t)
	require.Equal(t, int64(300<<10), s.Stats().Governor.Decoded.Used)

	id := send(a, 50<<10)
	r := a.next()
	require.Equal(t, id, r.id)
	require.NotNil(t, r.err, "a holds 300 KiB of its 200 KiB share while 50 KiB would be left")
	assert.Equal(t, protocol.CodeResourceExhausted, r.err.Code)
	assert.Equal(t, server.ReasonDecodedBytes, r.err.Reason)

	bid := send(b, 50<<10)
	g.await(t) // b's decode started: it holds its 50 KiB
	assert.Equal(t, int64(350<<10), s.Stats().Governor.Decoded.Used)

	g.open()
	for range held {
		r := a.next()
		require.Nil(t, r.err)
		assert.Contains(t, held, r.id)
	}
	r = b.next()
	require.Equal(t, bid, r.id)
	require.Nil(t, r.err)
	assert.Equal(t, uint64(1), s.Stats().Refusals[server.ReasonDecodedBytes])
	requireLedgerZero(t, s.testServer)
}
