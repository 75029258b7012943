package server_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/codecs"
	"github.com/sluicerpc/sluice/kernel/governor"
	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/server"
)

// decodeGate holds every decode at the BeforeDecode hook: entered is
// signalled when a decode is about to run; the decode goes on when
// release is closed or the call's context ends, which is reported on
// ended. (The call's context is pooled with the call: the test must not
// keep it.)
type decodeGate struct {
	entered chan struct{}
	ended   chan error
	release chan struct{}
	once    sync.Once
}

func holdDecodes(s *testServer) *decodeGate {
	g := &decodeGate{entered: make(chan struct{}, 64), ended: make(chan error, 64), release: make(chan struct{})}
	server.SetTestHooks(s.Server, &server.TestHooks{BeforeDecode: func(ctx context.Context) {
		g.entered <- struct{}{}
		select {
		case <-g.release:
		case <-ctx.Done():
			g.ended <- ctx.Err()
		}
	}})
	return g
}

// ctxEnded waits for a held decode's context to end and returns its error.
func (g *decodeGate) ctxEnded(t *testing.T) error {
	t.Helper()
	select {
	case err := <-g.ended:
		return err
	case <-time.After(20 * time.Second):
		t.Fatal("the held decode's context did not end")
		return nil
	}
}

func (g *decodeGate) open() { g.once.Do(func() { close(g.release) }) }

func (g *decodeGate) await(t *testing.T) {
	t.Helper()
	select {
	case <-g.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("no decode started")
	}
}

func (c *rawClient) cancel(id uint64) {
	c.t.Helper()
	frame, err := protocol.AppendCancel(nil, id, protocol.CancelCaller)
	require.NoError(c.t, err)
	c.write(frame)
}

// TestCancelDuringDecode: a Cancel frame that arrives while the call
// decodes (the reader is free: the decode runs in the call's goroutine)
// ends the decode and the call with Canceled; the handler never runs.
func TestCancelDuringDecode(t *testing.T) {
	for _, n := range []int{2000, 3 << 20} { // below and above one quantum
		s := startInstrumented(t, server.Options{Compression: codecs.Config{DecodeRatio: -1}})
		g := holdDecodes(s.testServer)
		c := s.dial(t)
		body := compressible(n)
		id := c.send("echo", "Hold", compress(t, codecs.Zstd(), body), compressed(c.codecID("zstd"), n))
		g.await(t)
		c.cancel(id)
		require.ErrorIs(t, g.ctxEnded(t), context.Canceled)
		r := c.next()
		require.Equal(t, id, r.id)
		require.NotNil(t, r.err)
		assert.Equal(t, protocol.CodeCanceled, r.err.Code, "%d bytes", n)
		assert.Empty(t, s.mux.entered, "the handler never ran")
		requireLedgerZero(t, s.testServer)
		assert.Equal(t, uint64(1), s.Stats().Cancels)
	}
}

// TestCancelBeforeReservation: a compressed call queued by admission and
// cancelled there is never decoded and holds nothing afterwards.
func TestCancelBeforeReservation(t *testing.T) {
	s := startInstrumented(t, server.Options{Admission: globalConcurrency(1, 4)})
	holder := s.dial(t)
	holder.send("echo", "Hold", nil, nil)
	<-s.mux.entered
	c := s.dial(t)
	body := compressible(100 << 10)
	id := c.send("echo", "Say", compress(t, codecs.Gzip(), body), compressed(c.codecID("gzip"), len(body)))
	require.Eventually(t, func() bool { return s.Stats().Admission.QueuedCalls == 1 }, 10*time.Second, time.Millisecond)
	assert.Equal(t, int64(len(compress(t, codecs.Gzip(), body))), s.Stats().Governor.Retained.Used, "a queued call retains its compressed bytes")
	c.cancel(id)
	r := c.next()
	require.Equal(t, id, r.id)
	require.NotNil(t, r.err)
	assert.Equal(t, protocol.CodeCanceled, r.err.Code)
	n, _ := s.decodes()
	assert.Zero(t, n)
	close(s.mux.block)
	require.Nil(t, holder.next().err)
	requireLedgerZero(t, s.testServer)
}

// TestDeadlineDuringDecode: the call's budget runs out while it decodes.
func TestDeadlineDuringDecode(t *testing.T) {
	s := startInstrumented(t, server.Options{})
	g := holdDecodes(s.testServer)
	c := s.dial(t)
	body := compressible(5000)
	id := c.send("echo", "Say", compress(t, codecs.Zstd(), body), func(r *protocol.Request) {
		compressed(c.codecID("zstd"), len(body))(r)
		r.HasBudget, r.Budget = true, 50*time.Millisecond
	})
	g.await(t)
	require.ErrorIs(t, g.ctxEnded(t), context.DeadlineExceeded) // the budget runs out while the decode is held
	r := c.next()
	require.Equal(t, id, r.id)
	require.NotNil(t, r.err)
	assert.Equal(t, protocol.CodeDeadlineExceeded, r.err.Code)
	requireLedgerZero(t, s.testServer)
}

// TestConnectionCloseAndStopDuringDecode: a decode in progress when its
// connection closes, or when the server stops, ends; Stop returns within
// its context, and everything is given back.
func TestConnectionCloseAndStopDuringDecode(t *testing.T) {
	s := startInstrumented(t, server.Options{Compression: codecs.Config{DecodeRatio: -1}})
	g := holdDecodes(s.testServer)
	c := s.dial(t)
	body := compressible(1 << 20)
	c.send("echo", "Say", compress(t, codecs.Brotli(), body), compressed(c.codecID("br"), len(body)))
	g.await(t)
	require.NoError(t, c.nc.Close())
	require.Error(t, g.ctxEnded(t))
	requireLedgerZero(t, s.testServer)

	c = s.dial(t)
	c.send("echo", "Say", compress(t, codecs.Brotli(), body), compressed(c.codecID("br"), len(body)))
	g.await(t)
	stopCtx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	stopped := make(chan error, 1)
	go func() { stopped <- s.Stop(stopCtx) }()
	// The held decode keeps Stop waiting until its context ends it (Stop's
	// deadline cancels every call), then Stop returns.
	select {
	case err := <-stopped:
		assert.ErrorIs(t, err, context.DeadlineExceeded)
	case <-time.After(20 * time.Second):
		t.Fatal("Stop did not return after its context ended")
	}
	require.Error(t, g.ctxEnded(t))
	requireLedgerZero(t, s.testServer)
}

// TestDecodeFailureRacingCancel: a corrupt body and a Cancel for it race;
// the call is answered once (InvalidArgument or Canceled) and released
// once, every time.
func TestDecodeFailureRacingCancel(t *testing.T) {
	s := startInstrumented(t, server.Options{})
	c := s.dial(t)
	z := compress(t, codecs.Zstd(), compressible(300<<10))
	bad := z[:len(z)-3]
	for range 200 {
		id := c.send("echo", "Say", bad, compressed(c.codecID("zstd"), 300<<10))
		c.cancel(id)
		r := c.next()
		require.Equal(t, id, r.id)
		require.NotNil(t, r.err)
		require.Contains(t, []protocol.Code{protocol.CodeInvalidArgument, protocol.CodeCanceled}, r.err.Code, r.err.Message)
	}
	require.Nil(t, c.call("echo", "Say", []byte("x")).err, "no second answer was pending")
	requireLedgerZero(t, s.testServer)
	assert.Zero(t, s.Stats().Admission.DoubleReleases)
}

// TestDecodeCreditsBoundConcurrentDecodes: with Decodes 1, a second
// compressed call waits for the credit (it is not refused), and a call
// cancelled while it waits holds nothing; lowering the bound live revokes
// nothing.
func TestDecodeCreditsBoundConcurrentDecodes(t *testing.T) {
	s := startInstrumented(t, server.Options{Governor: governor.Limits{Decodes: 1}})
	g := holdDecodes(s.testServer)
	c := s.dial(t)
	body := compressible(10 << 10)
	z := compress(t, codecs.Zstd(), body)
	first := c.send("echo", "Say", z, compressed(c.codecID("zstd"), len(body)))
	g.await(t)
	second := c.send("echo", "Say", z, compressed(c.codecID("zstd"), len(body)))
	third := c.send("echo", "Say", z, compressed(c.codecID("zstd"), len(body)))
	require.Eventually(t, func() bool {
		return s.Stats().Governor.Decodes.Used == 1 && s.Server.Stats().Governor.Decoded.Used == int64(3*len(body))
	}, 10*time.Second, time.Millisecond)
	c.cancel(third)
	r := c.next()
	require.Equal(t, third, r.id)
	assert.Equal(t, protocol.CodeCanceled, r.err.Code)
	require.NoError(t, s.SetGovernorLimits(governor.Limits{Decodes: 1}))
	g.open()
	got := map[uint64]bool{}
	for range 2 {
		r := c.next()
		require.Nil(t, r.err)
		assert.Equal(t, body, c.decodeResponse(r))
		got[r.id] = true
	}
	assert.Equal(t, map[uint64]bool{first: true, second: true}, got)
	requireLedgerZero(t, s.testServer)
}

// TestByteBudgetsRefuseWithTheirReason: a compressed request that the
// retained or decoded bytes budget cannot hold is refused with
// ResourceExhausted and the budget's reason, having decoded nothing.
func TestByteBudgetsRefuseWithTheirReason(t *testing.T) {
	body := compressible(200 << 10)
	z := compress(t, codecs.Zstd(), body)
	for _, tc := range []struct {
		lim    governor.Limits
		reason string
	}{
		{governor.Limits{RetainedBytes: int64(len(z)) - 1}, server.ReasonRetainedBytes},
		{governor.Limits{DecodedBytes: int64(len(body)) - 1}, server.ReasonDecodedBytes},
	} {
		s := startInstrumented(t, server.Options{Governor: tc.lim})
		c := s.dial(t)
		id := c.send("echo", "Say", z, compressed(c.codecID("zstd"), len(body)))
		r := c.next()
		require.Equal(t, id, r.id)
		require.NotNil(t, r.err)
		assert.Equal(t, protocol.CodeResourceExhausted, r.err.Code)
		assert.Equal(t, tc.reason, r.err.Reason)
		n, _ := s.decodes()
		assert.Zero(t, n)
		assert.Equal(t, uint64(1), s.Stats().Refusals[tc.reason])
		require.Nil(t, c.call("echo", "Say", []byte("uncompressed calls are not governed by byte budgets")).err)
		requireLedgerZero(t, s.testServer)
	}
}
