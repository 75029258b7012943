package server_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/server"
	"github.com/sluicerpc/sluice/server/servertest"
)

// The deadline endings of a queued call run in a synctest bubble on the
// in-memory network: the request's budget and the queue delay run on the
// bubble's clock, so the tests see the call queued for exactly its budget
// however slow the machine is.

// startPipeQueue serves gate/Wait on a pipe network with o (call it in the
// bubble) and returns a connected client with one call holding the
// admission unit.
func startPipeQueue(t *testing.T, o server.Options) (*testServer, *gateHandlers, *rawClient, uint64, gateEntry) {
	t.Helper()
	n := servertest.NewNetwork()
	l, err := n.Listen("")
	require.NoError(t, err)
	s, h := serveGate(t, l, o)
	nc, err := n.Dial(context.Background(), s.addr)
	require.NoError(t, err)
	c := newRawClient(t, nc)
	c.handshake(nil)
	holderID := c.send("gate", "Wait", []byte("holder"), nil)
	return s, h, c, holderID, h.enter(t)
}

// finishHolder releases the holder and reads its answer.
func finishHolder(t *testing.T, c *rawClient, id uint64, holder gateEntry) {
	t.Helper()
	close(holder.release)
	r := c.next()
	require.Equal(t, id, r.id)
	require.Nil(t, r.err)
}

// TestQueuedCallEndedByItsDeadline: a queued call whose budget runs out
// while it waits is answered DeadlineExceeded at its deadline, not a
// moment before.
func TestQueuedCallEndedByItsDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const budget = time.Second
		s, h, c, holderID, holder := startPipeQueue(t, server.Options{Admission: oneAtATime()})
		start := time.Now()
		queuedID := c.send("gate", "Wait", nil, func(r *protocol.Request) { r.HasBudget, r.Budget = true, budget })
		synctest.Wait()
		require.Equal(t, 1, s.Stats().Admission.QueuedCalls)

		time.Sleep(time.Until(start.Add(budget)) - time.Nanosecond)
		synctest.Wait()
		require.Equal(t, 1, s.Stats().Admission.QueuedCalls, "the queued call ended before its deadline")
		time.Sleep(time.Nanosecond)
		r := c.next()
		require.Equal(t, queuedID, r.id)
		require.NotNil(t, r.err)
		assert.Equal(t, protocol.CodeDeadlineExceeded, r.err.Code)
		assert.Equal(t, start.Add(budget), time.Now(), "answered at the deadline")
		assert.Zero(t, s.Stats().Admission.QueuedCalls)

		finishHolder(t, c, holderID, holder)
		synctest.Wait()
		requireLedgerZero(t, s)
		requireNeverRan(t, h)
	})
}

// TestQueuedCallEndedByTheQueueDelay: a call that waits out the queue
// delay of the program it captured is refused ResourceExhausted with
// reason queue_timeout, at that delay.
func TestQueuedCallEndedByTheQueueDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := oneAtATime()
		o.Queue.MaxQueueDelay = time.Second
		s, h, c, holderID, holder := startPipeQueue(t, server.Options{Admission: o})
		start := time.Now()
		queuedID := c.send("gate", "Wait", nil, nil)
		synctest.Wait()
		require.Equal(t, 1, s.Stats().Admission.QueuedCalls)

		r := c.next()
		require.Equal(t, queuedID, r.id)
		require.NotNil(t, r.err)
		assert.Equal(t, protocol.CodeResourceExhausted, r.err.Code)
		assert.Equal(t, "queue_timeout", r.err.Reason)
		assert.Equal(t, start.Add(time.Second), time.Now(), "refused at the queue delay")

		finishHolder(t, c, holderID, holder)
		synctest.Wait()
		requireLedgerZero(t, s)
		requireNeverRan(t, h)
	})
}

// TestQueuedCallWhoseDeadlinePassedBeforeItQueued: a call whose budget
// ran out between its capture and its admission (the reader was slow)
// is refused by the kernel with the context's error as it would queue;
// the caller is told DeadlineExceeded, as for a deadline that ends in
// the queue or in the handler, not Canceled.
func TestQueuedCallWhoseDeadlinePassedBeforeItQueued(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, h, c, holderID, holder := startPipeQueue(t, server.Options{Admission: oneAtATime()})
		var stall atomic.Bool
		server.SetTestHooks(s.Server, &server.TestHooks{AfterCapture: func(uint64) {
			if stall.Load() {
				time.Sleep(time.Millisecond) // the reader is late: the budget below runs out
			}
		}})
		stall.Store(true)
		id := c.send("gate", "Wait", nil, func(r *protocol.Request) { r.HasBudget, r.Budget = true, time.Microsecond })
		r := c.next()
		require.Equal(t, id, r.id)
		require.NotNil(t, r.err)
		assert.Equal(t, protocol.CodeDeadlineExceeded, r.err.Code, "message %q", r.err.Message)
		assert.Empty(t, r.err.Reason)
		assert.Zero(t, s.Stats().Admission.QueuedCalls)

		finishHolder(t, c, holderID, holder)
		synctest.Wait()
		requireLedgerZero(t, s)
		requireNeverRan(t, h)
	})
}
