package client_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/client"
	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/protocol/status"
)

// TestEveryWaitToSendEndsWithTheCallersContext (issue 36 section 1): a
// server that stops reading, with a write timeout of an hour. Before,
// every caller on the connection waited for the write timeout: the one
// queueing into the full send buffer, and all the others behind it for
// the connection's send lock. Now each wait ends with its caller's
// context: a unary call waiting for the send turn, a unary call waiting
// for buffer space, a stream being opened, a stream's Send and its
// CloseSend. Frames that were not queued leave their ids unused: when the
// server reads again, the ids it sees still increase, and the next call
// is answered.
//
// The verdicts are the errors (DeadlineExceeded or Canceled, never
// Unavailable from the write timeout); the watchdog of a minute only
// separates "returned" from "waits for the hour". The overrun past each
// deadline is logged, not asserted.
func TestEveryWaitToSendEndsWithTheCallersContext(t *testing.T) {
	p := startStreamPeer(t, streamCaps)
	c := dial(t, client.Options{WriteTimeout: time.Hour, MaxAttempts: 1}, p.addr)

	// Two streams opened while the server still reads.
	sendCtx, cancelSend := context.WithCancel(context.Background())
	defer cancelSend()
	sending, err := c.NewStream(sendCtx, "svc/M", client.StreamBidi)
	require.NoError(t, err)
	closeCtx, cancelClose := context.WithCancel(context.Background())
	defer cancelClose()
	closing, err := c.NewStream(closeCtx, "svc/M", client.StreamClient)
	require.NoError(t, err)
	pc := p.next(t)
	pc.request(t)
	pc.request(t)

	// The server reads nothing more: calls without a deadline fill the
	// sockets and the client's send buffer, one of them waiting for
	// space while holding the send turn, the others waiting for it.
	fillCtx, cancelFill := context.WithCancel(context.Background())
	body := make([]byte, 1<<20-64)
	const fillers = 24
	filled := make(chan error, fillers)
	for range fillers {
		go func() {
			_, err := c.CallRaw(fillCtx, "svc/M", body)
			filled <- err
		}()
	}
	waitParkedIn(t, "protocol.(*Writer).WriteContext")

	returns := func(what string, call func() error) error {
		t.Helper()
		begin := time.Now()
		done := make(chan error, 1)
		go func() { done <- call() }()
		select {
		case err := <-done:
			t.Logf("%s returned after %v: %v", what, time.Since(begin).Round(time.Millisecond), err)
			return err
		case <-time.After(time.Minute):
			t.Fatalf("%s still waits a minute later: it waits for the write timeout", what)
			return nil
		}
	}
	const deadline = 300 * time.Millisecond
	requireDeadline := func(err error) {
		t.Helper()
		require.Error(t, err)
		assert.True(t, errors.Is(err, context.DeadlineExceeded) || status.Code(err) == protocol.CodeDeadlineExceeded, "%v", err)
	}

	// Behind the filler that holds the send turn.
	requireDeadline(returns("a unary call waiting for the send turn", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		defer cancel()
		_, err := c.CallRaw(ctx, "svc/M", []byte("late"))
		return err
	}))
	requireDeadline(returns("a stream opening behind the send turn", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		defer cancel()
		_, err := c.NewStream(ctx, "svc/M", client.StreamBidi)
		return err
	}))

	// The fillers give up: the one waiting for space returns (its frame
	// not queued), and so do those waiting for the turn. The buffer
	// stays full.
	cancelFill()
	for range fillers {
		err := <-filled
		require.Error(t, err)
		require.True(t, errors.Is(err, context.Canceled) || status.Code(err) == protocol.CodeCanceled, "%v", err)
	}

	// Now a caller takes the turn at once and waits for space.
	requireDeadline(returns("a unary call waiting for buffer space", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		defer cancel()
		_, err := c.CallRaw(ctx, "svc/M", []byte("late"))
		return err
	}))
	requireDeadline(returns("a stream opening, waiting for buffer space", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		defer cancel()
		_, err := c.NewStream(ctx, "svc/M", client.StreamBidi)
		return err
	}))

	// A stream's Send and CloseSend wait for space until the stream's
	// context is cancelled.
	var wg sync.WaitGroup
	wg.Go(func() {
		waitParkedIn(t, "client.(*Stream).Send")
		cancelSend()
	})
	err = returns("a stream's Send waiting for buffer space", func() error { return sending.Send(make([]byte, 1024)) })
	wg.Wait()
	require.ErrorIs(t, err, context.Canceled)
	wg.Go(func() {
		waitParkedIn(t, "client.(*Stream).CloseSend")
		cancelClose()
	})
	err = returns("a stream's CloseSend waiting for buffer space", closing.CloseSend)
	wg.Wait()
	require.ErrorIs(t, err, context.Canceled)

	// The server reads again: it sees increasing ids (those not queued
	// were skipped) and answers the next call.
	served := make(chan error, 1)
	go func() {
		last := uint64(0)
		for {
			h, payload, err := pc.rd.ReadFrame()
			if err != nil {
				served <- err
				return
			}
			if h.Type != protocol.FrameRequest {
				continue
			}
			if h.ID <= last {
				served <- errors.New("request ids do not increase")
				return
			}
			last = h.ID
			var r protocol.Request
			if err := protocol.ParseRequest(h, payload, protocol.DefaultLimits(), &r); err != nil {
				served <- err
				return
			}
			if string(r.Body) == "honest" {
				resp, _ := protocol.AppendResponse(nil, h.ID, &protocol.Response{Body: []byte("answered")})
				_, err := pc.nc.Write(resp)
				served <- err
				return
			}
		}
	}()
	out, err := c.CallRaw(ctxTimeout(t, time.Minute), "svc/M", []byte("honest"))
	require.NoError(t, <-served)
	require.NoError(t, err)
	require.Equal(t, "answered", string(out))
}
