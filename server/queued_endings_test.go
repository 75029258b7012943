package server_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/server"
)

// The tests here end a call while it waits in the admission queue, over
// real TCP: one call of gate/Wait holds the only admission unit, a second
// one queues behind it, and the test ends the second one by each way a
// queued call can end. Each checks the answer on the wire (when the client
// can still read one) and that the ledger is back to zero: no reservation,
// no permit, nothing queued. The deadline endings run on synctest's clock
// (queued_deadline_test.go).

// startQueueServer serves gate/Wait over TCP under oneAtATime, and returns
// a connected client with one call holding the admission unit (its id and
// its entry) and a second call queued behind it (its id).
func startQueueServer(t *testing.T) (s *testServer, h *gateHandlers, c *rawClient, holderID uint64, holder gateEntry, queuedID uint64) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s, h = serveGate(t, l, server.Options{Admission: oneAtATime()})
	c = dialRaw(t, s.addr)
	holderID = c.send("gate", "Wait", []byte("holder"), nil)
	holder = h.enter(t)
	queuedID = c.send("gate", "Wait", []byte("queued"), nil)
	requireQueued(t, s, 1)
	return s, h, c, holderID, holder, queuedID
}

// requireNeverRan checks that no call other than those the test took
// reached the handler.
func requireNeverRan(t *testing.T, h *gateHandlers) {
	t.Helper()
	require.Empty(t, h.entered, "a call ended in the queue reached its handler")
}

// TestQueuedCallEndedByCancel: a Cancel frame for a queued call ends its
// wait at once with Canceled; the call holding the unit is untouched and
// the cancelled call never runs.
func TestQueuedCallEndedByCancel(t *testing.T) {
	s, h, c, holderID, holder, queuedID := startQueueServer(t)
	f, err := protocol.AppendCancel(nil, queuedID, protocol.CancelCaller)
	require.NoError(t, err)
	c.write(f)

	r := c.next()
	require.Equal(t, queuedID, r.id, "the queued call is answered first: the holder still holds")
	require.NotNil(t, r.err)
	assert.Equal(t, protocol.CodeCanceled, r.err.Code)
	assert.Empty(t, r.err.Reason, "a cancellation is not an admission refusal")
	assert.Equal(t, uint64(1), s.Stats().Cancels)
	requireQueued(t, s, 0)

	close(holder.release)
	require.NoError(t, <-holder.ctxErr, "the holder was not cancelled")
	r = c.next()
	require.Equal(t, holderID, r.id)
	require.Nil(t, r.err)
	assert.Equal(t, "holder", string(r.body))
	requireLedgerZero(t, s)
	requireNeverRan(t, h)
}

// TestQueuedCallEndedByStop: Stop seals admission, which ends the queued
// call at once with Unavailable (reason "unavailable") while the call
// holding the unit runs to its end; Stop returns once it has.
func TestQueuedCallEndedByStop(t *testing.T) {
	s, h, c, holderID, holder, queuedID := startQueueServer(t)
	stopped := make(chan error, 1)
	go func() { stopped <- s.Stop(context.Background()) }()

	// The GoAway and the queued call's answer, in either order: Seal and
	// the drain run one after the other, the answer is written by the
	// queued call's own goroutine.
	var goAway *protocol.GoAway
	var refusal *protocol.ErrorFrame
	for goAway == nil || refusal == nil {
		fh, payload := c.read()
		switch fh.Type {
		case protocol.FrameGoAway:
			goAway = new(protocol.GoAway)
			require.NoError(t, protocol.ParseGoAway(fh, payload, goAway))
		case protocol.FrameError:
			require.Equal(t, queuedID, fh.ID, "only the queued call is answered before the holder is released")
			refusal = new(protocol.ErrorFrame)
			require.NoError(t, protocol.ParseError(fh, payload, protocol.DefaultLimits(), refusal))
		default:
			t.Fatalf("unexpected %v frame during Stop", fh.Type)
		}
	}
	assert.Equal(t, queuedID, goAway.LastID, "the queued request was accepted")
	assert.Equal(t, protocol.CodeUnavailable, refusal.Code)
	assert.Equal(t, "unavailable", refusal.Reason)
	requireQueued(t, s, 0)
	select {
	case err := <-stopped:
		t.Fatalf("Stop returned (%v) while a call was in flight", err)
	default:
	}

	close(holder.release)
	require.NoError(t, <-holder.ctxErr, "Stop cancelled the holder")
	r := c.next()
	require.Equal(t, holderID, r.id)
	require.Nil(t, r.err, "the holder finishes normally")
	assert.Nil(t, c.expectClosed())
	select {
	case err := <-stopped:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("Stop did not return after the last call ended")
	}
	requireLedgerZero(t, s)
	requireNeverRan(t, h)
	st := s.Stats()
	assert.True(t, st.Admission.Sealed)
	assert.Zero(t, st.Admission.LivePrograms, "Stop drained admission")
	assert.Zero(t, st.Connections)
	assert.Zero(t, st.Handshakes)
}

// TestQueuedCallEndedByConnectionClose: the client closes the connection;
// the queued call and the holder both end (nobody can read their answers)
// and everything they held comes back.
func TestQueuedCallEndedByConnectionClose(t *testing.T) {
	s, h, c, _, holder, _ := startQueueServer(t)
	require.NoError(t, c.nc.Close())
	assert.ErrorIs(t, <-holder.ctxErr, context.Canceled, "the holder's context ends with the connection")
	requireLedgerZero(t, s)
	requireNeverRan(t, h)
	require.Eventually(t, func() bool { return s.Stats().Connections == 0 }, 30*time.Second, time.Millisecond)
}

// TestQueuedCallEndedByHalfClose: the client closes its sending side only:
// the server takes it as the client leaving and ends both calls, and the
// client, still reading, gets Canceled for each before the close.
func TestQueuedCallEndedByHalfClose(t *testing.T) {
	s, h, c, holderID, holder, queuedID := startQueueServer(t)
	require.NoError(t, c.nc.(*net.TCPConn).CloseWrite())
	assert.ErrorIs(t, <-holder.ctxErr, context.Canceled)
	got := map[uint64]protocol.Code{}
	for range 2 {
		r := c.next()
		require.NotNil(t, r.err, "call %d", r.id)
		got[r.id] = r.err.Code
	}
	assert.Equal(t, map[uint64]protocol.Code{holderID: protocol.CodeCanceled, queuedID: protocol.CodeCanceled}, got)
	assert.Nil(t, c.expectClosed())
	requireLedgerZero(t, s)
	requireNeverRan(t, h)
}

// TestQueuedCallKeepsItsProgramAcrossDisable: Disable while a call waits
// under program N (docs/admission.md, "Disable (N -> nil)"): new requests
// bypass admission at once, the queued call keeps waiting under N, is
// granted by N when the holder releases N's unit, runs with N's generation
// and releases into N's state; N is reclaimed once it has.
func TestQueuedCallKeepsItsProgramAcrossDisable(t *testing.T) {
	s, h, c, holderID, holder, queuedID := startQueueServer(t)
	genN := s.Admission().Generation()
	require.Equal(t, genN, holder.info.Generation)
	_, err := s.Admission().Disable()
	require.NoError(t, err)

	// Disabled: a new call bypasses admission although N's unit is held.
	bypassID := c.send("gate", "Wait", []byte("bypass"), nil)
	bypass := h.enter(t)
	assert.Equal(t, bypassID, bypass.info.ID)
	assert.Zero(t, bypass.info.Generation, "admitted by no program")
	st := s.Stats().Admission
	assert.Equal(t, 1, st.QueuedCalls, "the queued call still waits under N")
	assert.Equal(t, int64(1), st.LivePrograms, "N is live while its calls are")
	sc, ok := st.Scope("method:gate/Wait/concurrency")
	require.True(t, ok, "N's state is still there")
	assert.Equal(t, int64(1), sc.InUse, "only the holder holds N's unit; the bypass took none")
	assert.Equal(t, 1, sc.Waiters)

	// The holder releases N's unit: N grants it to the queued call.
	close(holder.release)
	r := c.next()
	require.Equal(t, holderID, r.id)
	require.Nil(t, r.err)
	queued := h.enter(t)
	assert.Equal(t, queuedID, queued.info.ID)
	assert.Equal(t, genN, queued.info.Generation, "the queued call runs under the program it captured")
	st = s.Stats().Admission
	assert.Zero(t, st.QueuedCalls)
	sc, ok = st.Scope("method:gate/Wait/concurrency")
	require.True(t, ok)
	assert.Equal(t, int64(1), sc.InUse, "the queued call holds N's unit")

	close(queued.release)
	close(bypass.release)
	got := map[uint64]string{}
	for range 2 {
		r := c.next()
		require.Nil(t, r.err)
		got[r.id] = string(r.body)
	}
	assert.Equal(t, map[uint64]string{queuedID: "queued", bypassID: "bypass"}, got)
	requireLedgerZero(t, s)
	require.Eventually(t, func() bool { return s.Stats().Admission.LivePrograms == 0 }, 30*time.Second, time.Millisecond,
		"N is reclaimed once its last call released")
	requireNeverRan(t, h)
}

// TestQueuedCallGrantedAsItsClientLeavesNeverRuns: a queued call granted
// when its client has gone (the connection ended between the grant and the
// handler; when the connection's end cancels the holder first, its unit is
// what grants the queued call) gives its grant back and never runs its
// handler. A hook holds the granted call until the connection's end has
// reached its context.
func TestQueuedCallGrantedAsItsClientLeavesNeverRuns(t *testing.T) {
	s, h, c, holderID, holder, _ := startQueueServer(t)
	granted := make(chan struct{})
	server.SetTestHooks(s.Server, &server.TestHooks{AfterGrant: func(ctx context.Context) {
		close(granted) // only the one queued call is ever granted
		<-ctx.Done()
	}})
	close(holder.release)
	r := c.next()
	require.Equal(t, holderID, r.id)
	require.Nil(t, r.err)
	select {
	case <-granted:
	case <-time.After(30 * time.Second):
		t.Fatal("the queued call was not granted when the holder returned")
	}
	require.NoError(t, c.nc.Close())
	requireLedgerZero(t, s)
	requireNeverRan(t, h)
	require.Eventually(t, func() bool { return s.Stats().Connections == 0 }, 30*time.Second, time.Millisecond)
}

// TestQueuedOneWayCallEndedByStop: a one-way call waiting in the queue
// (QueueOneWayCalls) is dropped at Stop: no frame answers it, it is
// counted, it never runs, and the ledger is back at zero.
func TestQueuedOneWayCallEndedByStop(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	o := oneAtATime()
	o.Queue.QueueOneWayCalls = true
	s, h := serveGate(t, l, server.Options{Admission: o})
	c := dialRaw(t, s.addr)
	holderID := c.send("gate", "Wait", nil, nil)
	holder := h.enter(t)
	oneWayID := c.send("gate", "Wait", nil, func(r *protocol.Request) { r.OneWay, r.Cancellable = true, false })
	requireQueued(t, s, 1)

	stopped := make(chan error, 1)
	go func() { stopped <- s.Stop(context.Background()) }()
	fh, payload := c.read()
	require.Equal(t, protocol.FrameGoAway, fh.Type)
	var g protocol.GoAway
	require.NoError(t, protocol.ParseGoAway(fh, payload, &g))
	assert.Equal(t, oneWayID, g.LastID)
	requireQueued(t, s, 0)
	require.Eventually(t, func() bool { return s.Stats().OneWayDropped == 1 }, 30*time.Second, time.Millisecond)

	close(holder.release)
	r := c.next() // the next frame answers the holder: nothing answered the one-way call
	require.Equal(t, holderID, r.id)
	require.Nil(t, r.err)
	assert.Nil(t, c.expectClosed())
	select {
	case err := <-stopped:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("Stop did not return after the last call ended")
	}
	requireLedgerZero(t, s)
	requireNeverRan(t, h)
}

// TestQueuedCallEndedByClose: Close ends the queued call with the rest
// (the client cannot read any more) and everything comes back, although
// Close does not wait for handlers.
func TestQueuedCallEndedByClose(t *testing.T) {
	s, h, c, _, holder, _ := startQueueServer(t)
	require.NoError(t, s.Close())
	assert.ErrorIs(t, <-holder.ctxErr, context.Canceled)
	c.expectClosed()
	requireLedgerZero(t, s)
	requireNeverRan(t, h)
	assert.Zero(t, s.Stats().Connections)
}
