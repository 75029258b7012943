package server_test

import (
	"bytes"
	"context"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/kernel"
	"github.com/sluicerpc/sluice/kernel/governor"
	"github.com/sluicerpc/sluice/limiters/concurrency"
	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/server"
	"github.com/sluicerpc/sluice/spi"
)

// oneSlowAtATime admits one stream/Slow at a time and queues the others.
func oneSlowAtATime(maxQueuedBytes int64) *kernel.Options {
	return &kernel.Options{
		Methods: map[string]kernel.Rule{"stream/Slow": {Limits: []spi.Spec{concurrency.Spec(1)}}},
		Queue:   kernel.QueuePolicy{MaxQueuedCalls: 8, MaxQueuedBytes: maxQueuedBytes, MaxQueueDelay: time.Hour},
	}
}

// queuedStream starts a server under o, opens a stream/Slow that holds
// the admission unit and a second one, with the first message "first",
// queued behind it.
func queuedStream(t *testing.T, o server.Options) (s *testServer, c *rawClient, holder, queued uint64) {
	t.Helper()
	s = startServer(t, o)
	c = dialStream(t, s.addr)
	holder = c.open("stream", "Slow", nil, false)
	<-s.mux.st.entered
	queued = c.open("stream", "Slow", []byte("first"), false)
	requireQueued(t, s, 1)
	return s, c, holder, queued
}

// TestStreamMessagesBufferedBeforeAdmission: messages for a queued stream
// are buffered in arrival order, charged to the pre-admission stream
// bytes and the queue's bytes, given back when it is admitted; its
// handler then receives them all, in order.
func TestStreamMessagesBufferedBeforeAdmission(t *testing.T) {
	s, c, holder, queued := queuedStream(t, server.Options{Admission: oneSlowAtATime(1 << 20)})
	h := s.mux.st
	queuedBytes := s.Stats().Admission.QueuedBytes
	c.msg(queued, []byte("abc"), false)
	c.msg(queued, []byte("defg"), false)
	require.Empty(t, c.pingPong())
	assert.Equal(t, int64(7), s.Stats().Governor.Stream.Used, "the buffered messages' bytes")
	assert.Equal(t, queuedBytes+7, s.Stats().Admission.QueuedBytes, "charged to the queue too")

	c.cancel(holder)
	assert.ErrorIs(t, <-h.recvErr, context.Canceled)
	<-h.entered // the queued stream runs
	assert.Zero(t, s.Stats().Governor.Stream.Used, "admitted: the window alone bounds it")
	assert.Zero(t, s.Stats().Admission.QueuedBytes)
	for _, want := range []string{"first", "abc", "defg"} {
		h.take <- struct{}{}
		assert.Equal(t, want, string(<-h.got))
	}
	c.end(queued)
	h.take <- struct{}{}
	assert.ErrorIs(t, <-h.recvErr, io.EOF)
	ends := map[uint64]protocol.FrameType{}
	for len(ends) < 2 {
		f, _ := c.nextOf()
		ends[f.id] = f.typ
	}
	assert.Equal(t, map[uint64]protocol.FrameType{holder: protocol.FrameError, queued: protocol.FrameEnd}, ends)
	requireLedgerZero(t, s)
}

// TestStreamRefusedBeforeAdmission: a queued stream whose buffered
// messages exceed the pre-admission stream bytes or the queue's bytes is
// refused (ResourceExhausted, stream_bytes or queue_full); its buffered
// messages are dropped and their bytes returned to the connection at
// once, a message that crosses the refusal is dropped too, and the
// connection and the stream holding the unit go on. A queued stream
// cancelled with messages buffered gives them back alike.
func TestStreamRefusedBeforeAdmission(t *testing.T) {
	six := bytes.Repeat([]byte("6"), 6)
	thirty := bytes.Repeat([]byte("3"), 30)
	cases := []struct {
		name   string
		o      server.Options
		msgs   [][]byte
		reason string
	}{
		{"stream_bytes", server.Options{Admission: oneSlowAtATime(1 << 20), Governor: governor.Limits{StreamBytes: 10}}, [][]byte{six, six}, server.ReasonStreamBytes},
		{"queue_full", server.Options{Admission: oneSlowAtATime(64)}, [][]byte{thirty, thirty}, "queue_full"},
		{"cancel", server.Options{Admission: oneSlowAtATime(1 << 20)}, [][]byte{six, six}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, c, holder, queued := queuedStream(t, tc.o)
			h := s.mux.st
			sent := cost(len("first"))
			for _, m := range tc.msgs {
				c.msg(queued, m, false)
				sent += cost(len(m))
			}
			if tc.reason == "" {
				c.cancel(queued)
			}
			fs := c.readUntilReturned(sent)
			if len(fs) == 0 { // the reader returned the bytes before the call's goroutine answered
				f, _ := c.nextOf()
				fs = append(fs, f)
			}
			require.Len(t, fs, 1, "%+v", fs)
			assert.Equal(t, queued, fs[0].id)
			require.NotNil(t, fs[0].err)
			if tc.reason == "" {
				assert.Equal(t, protocol.CodeCanceled, fs[0].err.Code)
			} else {
				assert.Equal(t, protocol.CodeResourceExhausted, fs[0].err.Code)
				assert.Equal(t, tc.reason, fs[0].err.Reason)
				assert.Equal(t, uint64(1), s.Stats().Refusals[tc.reason])
			}
			assert.Zero(t, s.Stats().Governor.Stream.Used)
			assert.Zero(t, s.Stats().Admission.QueuedCalls)

			c.msg(queued, []byte("late"), true) // crossed the refusal: dropped
			assert.Empty(t, c.readUntilReturned(cost(4)))
			// The holder is untouched and the connection usable.
			c.msg(holder, []byte("h"), false)
			h.take <- struct{}{}
			assert.Equal(t, "h", string(<-h.got))
			assert.Nil(t, c.call("echo", "Say", []byte("ok")).err)
			c.cancel(holder)
			assert.ErrorIs(t, <-h.recvErr, context.Canceled)
			assert.Empty(t, h.entered, "the refused stream never ran")
			assert.Zero(t, s.Stats().ProtocolViolations)
			requireLedgerZero(t, s)
		})
	}
}

// TestAdmissionChangesDoNotTouchARunningStream: a stream admitted under
// one program keeps its permit through an Update and a Disable; it runs
// on, and its end releases that permit once, to the program that granted
// it (no scope left in use, no double release).
func TestAdmissionChangesDoNotTouchARunningStream(t *testing.T) {
	s := startServer(t, server.Options{Admission: oneSlowAtATime(1 << 20)})
	h := s.mux.st
	c := dialStream(t, s.addr)
	id := c.open("stream", "Slow", []byte("a"), false)
	<-h.entered
	gen, err := s.Admission().Update(s.Admission().Generation(), kernel.Options{
		Methods: map[string]kernel.Rule{"stream/Slow": {Limits: []spi.Spec{concurrency.Spec(5)}}},
	})
	require.NoError(t, err)
	_ = gen
	_, err = s.Admission().Disable()
	require.NoError(t, err)
	for _, m := range []string{"a", "b"} {
		if m == "b" {
			c.msg(id, []byte("b"), true)
		}
		h.take <- struct{}{}
		assert.Equal(t, m, string(<-h.got))
	}
	h.take <- struct{}{}
	assert.ErrorIs(t, <-h.recvErr, io.EOF)
	f, _ := c.nextOf()
	assert.Equal(t, id, f.id)
	assert.Equal(t, protocol.FrameEnd, f.typ)
	requireLedgerZero(t, s)
	assert.Zero(t, s.Stats().Admission.DoubleReleases)
}
