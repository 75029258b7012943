package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/codecs"
	"github.com/sluicerpc/sluice/kernel/governor"
	"github.com/sluicerpc/sluice/server"
)

// TestSmallDecodesNeverWaitBehindLargeOnes (issue 25 section 2): with two
// decode credits, a large decode (more than governor.LargeDecode declared)
// holds one; a second large one waits for its place among the large
// decodes instead of taking the last credit, which a small decode then
// gets at once. Before, the second large decode took the credit and the
// small one waited behind both (a bomb's decode is about 100 ms of CPU).
func TestSmallDecodesNeverWaitBehindLargeOnes(t *testing.T) {
	s := startInstrumented(t, server.Options{Governor: governor.Limits{Decodes: 2}, Compression: codecs.Config{DecodeRatio: -1}})
	entered := make(chan uint64, 8)
	release := make(chan struct{})
	server.SetTestHooks(s.Server, &server.TestHooks{BeforeDecode: func(ctx context.Context) {
		info, _ := server.CallInfoFromContext(ctx)
		entered <- info.ID
		select {
		case <-release:
		case <-ctx.Done():
		}
	}})
	next := func() uint64 {
		t.Helper()
		select {
		case id := <-entered:
			return id
		case <-time.After(10 * time.Second):
			t.Fatal("no decode started")
			return 0
		}
	}
	c := s.dial(t)
	send := func(n int) uint64 {
		body := compressible(n)
		return c.send("echo", "Say", compress(t, codecs.Zstd(), body), compressed(c.codecID("zstd"), n))
	}
	large := governor.LargeDecode + 1
	first := send(large)
	require.Equal(t, first, next())
	second := send(large)
	require.Eventually(t, func() bool { return s.Stats().Governor.Decoded.Used == int64(2*large) }, 10*time.Second, time.Millisecond,
		"the second large request holds its decoded bytes and waits")
	small := send(16 << 10)
	assert.Equal(t, small, next(), "the small decode takes the last credit; the second large one waits")
	close(release)
	assert.Equal(t, second, next())
	got := map[uint64]bool{}
	for range 3 {
		r := c.next()
		require.Nil(t, r.err)
		got[r.id] = true
	}
	assert.Equal(t, map[uint64]bool{first: true, second: true, small: true}, got)
	requireLedgerZero(t, s.testServer)
}
