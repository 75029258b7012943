package client_test

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/client"
	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/spi"
)

func metaValue(t testing.TB, md *protocol.Metadata, key string) string {
	t.Helper()
	v, ok := md.Get(key)
	require.True(t, ok, "metadata %q", key)
	return string(v)
}

// TestStreamBidi: a bidirectional stream opens with a Request that has
// Stream and no message, carries messages both ways, half-closes with End,
// and ends with the server's End: Receive then reports io.EOF, Header
// holds the metadata of the server's first frame and Trailer its End's.
func TestStreamBidi(t *testing.T) {
	p := startStreamPeer(t, streamCaps)
	c := dial(t, client.Options{}, p.addr)
	s, err := c.NewStream(ctxTimeout(t, 10*time.Second), "svc/M", client.StreamBidi, client.WithMetadata("k", "v"))
	require.NoError(t, err)
	defer s.Close()
	pc := p.next(t)
	h, req := pc.request(t)
	assert.True(t, req.Stream)
	assert.False(t, req.HasMessage)
	assert.False(t, req.EndStream)
	assert.True(t, req.Cancellable)
	assert.Empty(t, req.Body)
	assert.Equal(t, "v", metaValue(t, &req.Metadata, "k"))
	id := h.ID

	require.NoError(t, s.Send([]byte("one")))
	mh, m := pc.message(t)
	assert.Equal(t, id, mh.ID)
	assert.Equal(t, "one", string(m.Body))
	assert.False(t, m.EndStream)

	pc.writeMessage(t, id, "reply", "h", "1")
	hd, err := s.Header()
	require.NoError(t, err)
	assert.Equal(t, "1", metaValue(t, hd, "h"))
	got, err := s.Receive()
	require.NoError(t, err)
	assert.Equal(t, "reply", string(got))

	require.NoError(t, s.CloseSend())
	eh, _ := pc.expect(t, protocol.FrameEnd)
	assert.Equal(t, id, eh.ID)
	assert.Zero(t, eh.Flags)
	require.Error(t, s.Send([]byte("late")), "Send after CloseSend")

	pc.writeMessage(t, id, "last")
	pc.writeEnd(t, id, "t", "2")
	got, err = s.Receive()
	require.NoError(t, err)
	assert.Equal(t, "last", string(got))
	_, err = s.Receive()
	require.ErrorIs(t, err, io.EOF)
	assert.Equal(t, "2", metaValue(t, s.Trailer(), "t"))
	_, err = s.Receive()
	require.ErrorIs(t, err, io.EOF, "the end is sticky")
}

// TestStreamServer: a server-streaming call is one frame (Stream |
// HasMessage | EndStream carrying the request); a second Send fails.
// When End is the server's first frame its metadata is both the headers
// and the trailers.
func TestStreamServer(t *testing.T) {
	p := startStreamPeer(t, streamCaps)
	c := dial(t, client.Options{}, p.addr)
	s, err := c.NewStream(ctxTimeout(t, 10*time.Second), "svc/M", client.StreamServer)
	require.NoError(t, err)
	defer s.Close()
	_, err = s.Receive()
	requireCode(t, err, protocol.CodeFailedPrecondition)

	require.NoError(t, s.Send([]byte("req")))
	pc := p.next(t)
	h, req := pc.request(t)
	assert.True(t, req.Stream && req.HasMessage && req.EndStream)
	assert.Equal(t, "req", string(req.Body))
	requireCode(t, s.Send([]byte("again")), protocol.CodeFailedPrecondition)
	require.NoError(t, s.CloseSend(), "already half-closed")

	pc.writeEnd(t, h.ID, "x", "y")
	_, err = s.Receive()
	require.ErrorIs(t, err, io.EOF)
	hd, err := s.Header()
	require.NoError(t, err)
	assert.Equal(t, "y", metaValue(t, hd, "x"))
	assert.Equal(t, "y", metaValue(t, s.Trailer(), "x"))
}

// TestStreamServerError: the server's Error frame ends the stream with its
// status, after the messages that came before it; its metadata is the
// trailers; Send then reports io.EOF.
func TestStreamServerError(t *testing.T) {
	p := startStreamPeer(t, streamCaps)
	c := dial(t, client.Options{}, p.addr)
	s, err := c.NewStream(ctxTimeout(t, 10*time.Second), "svc/M", client.StreamClient)
	require.NoError(t, err)
	defer s.Close()
	pc := p.next(t)
	h, _ := pc.request(t)
	pc.writeMessage(t, h.ID, "m")
	ef := protocol.ErrorFrame{Code: protocol.CodeNotFound, Message: "gone"}
	require.NoError(t, ef.Metadata.Add("t", []byte("3")))
	f, err := protocol.AppendError(nil, h.ID, &ef)
	require.NoError(t, err)
	pc.write(t, f)

	got, err := s.Receive()
	require.NoError(t, err)
	assert.Equal(t, "m", string(got))
	_, err = s.Receive()
	st := requireCode(t, err, protocol.CodeNotFound)
	assert.Equal(t, "gone", st.Message)
	assert.Equal(t, "3", metaValue(t, s.Trailer(), "t"))
	require.ErrorIs(t, s.Send([]byte("x")), io.EOF)
}

// TestStreamNeedsCapStreaming: on a server that did not announce
// CapStreaming a stream fails locally, before anything is sent.
func TestStreamNeedsCapStreaming(t *testing.T) {
	p := startStreamPeer(t, protocol.CapCancel)
	c := dial(t, client.Options{}, p.addr)
	_, err := c.NewStream(ctxTimeout(t, 10*time.Second), "svc/M", client.StreamBidi)
	st := requireCode(t, err, protocol.CodeUnimplemented)
	assert.Equal(t, "the server does not support streaming", st.Message)
	s, err := c.NewStream(ctxTimeout(t, 10*time.Second), "svc/M", client.StreamServer)
	require.NoError(t, err)
	requireCode(t, s.Send([]byte("x")), protocol.CodeUnimplemented)
	pc := p.next(t)
	require.NoError(t, c.Close())
	_, _, err = pc.readErr()
	require.ErrorIs(t, err, io.EOF, "nothing was sent")
}

// TestStreamAnnouncesCapStreaming: the handshake offers streaming.
func TestStreamAnnouncesCapStreaming(t *testing.T) {
	peer := startCodecPeer(t, peerConfig{})
	c := dial(t, client.Options{}, peer.addr)
	_, err := c.CallRaw(ctxTimeout(t, 10*time.Second), "svc/M", nil)
	require.NoError(t, err)
	hs := peer.handshakes()
	require.Len(t, hs, 1)
	assert.True(t, hs[0].Capabilities.Has(protocol.CapStreaming))
}

// TestStreamSendWaitsForTheWindow: a message that uses the whole stream
// window leaves no credit; the next Send blocks until a WindowUpdate
// returns bytes, then goes.
func TestStreamSendWaitsForTheWindow(t *testing.T) {
	p := startStreamPeer(t, streamCaps)
	c := dial(t, client.Options{}, p.addr)
	s, err := c.NewStream(ctxTimeout(t, 10*time.Second), "svc/M", client.StreamBidi)
	require.NoError(t, err)
	defer s.Close()
	pc := p.next(t)
	h, _ := pc.request(t)
	big := strings.Repeat("a", protocol.InitialStreamWindow)
	require.NoError(t, s.Send([]byte(big)))
	_, m := pc.message(t)
	require.Len(t, m.Body, protocol.InitialStreamWindow)

	sent := make(chan error, 1)
	go func() { sent <- s.Send([]byte("b")) }()
	waitBlockedIn(t, "flow.(*SendWindow).reserve")
	select {
	case err := <-sent:
		t.Fatalf("Send returned (%v) with no credit", err)
	default:
	}
	pc.writeWindowUpdate(t, h.ID, 1, 0)
	require.NoError(t, recv(t, sent))
	_, m = pc.message(t)
	assert.Equal(t, "b", string(m.Body))
}

// TestStreamSendBlockedIsCancelled: a Send waiting for credit returns the
// context's error when it ends, and the stream is cancelled.
func TestStreamSendBlockedIsCancelled(t *testing.T) {
	p := startStreamPeer(t, streamCaps)
	c := dial(t, client.Options{}, p.addr)
	ctx, cancel := context.WithCancel(ctxTimeout(t, 10*time.Second))
	s, err := c.NewStream(ctx, "svc/M", client.StreamBidi)
	require.NoError(t, err)
	defer s.Close()
	pc := p.next(t)
	h, _ := pc.request(t)
	require.NoError(t, s.Send(make([]byte, protocol.InitialStreamWindow)))
	pc.message(t)
	sent := make(chan error, 1)
	go func() { sent <- s.Send([]byte("b")) }()
	waitBlockedIn(t, "flow.(*SendWindow).reserve")
	cancel()
	require.ErrorIs(t, recv(t, sent), context.Canceled)
	ch, payload := pc.expect(t, protocol.FrameCancel)
	assert.Equal(t, h.ID, ch.ID)
	reason, err := protocol.ParseCancel(ch, payload)
	require.NoError(t, err)
	assert.Equal(t, protocol.CancelCaller, reason)
	_, err = s.Receive()
	require.ErrorIs(t, err, context.Canceled)
}

// TestStreamReceiveReturnsCredit: the bytes of a message go back to the
// server when Receive hands it over, in batches (a quarter of the window),
// and messages dropped unread are returned to the connection window at
// once when the stream is closed (a WindowUpdate for id 0, then Cancel).
func TestStreamReceiveReturnsCredit(t *testing.T) {
	p := startStreamPeer(t, streamCaps)
	c := dial(t, client.Options{}, p.addr)
	s, err := c.NewStream(ctxTimeout(t, 10*time.Second), "svc/M", client.StreamBidi)
	require.NoError(t, err)
	pc := p.next(t)
	h, _ := pc.request(t)
	quarter := protocol.InitialStreamWindow / 4
	// "z" costs the least charge, protocol.MinMessageCost: the two
	// messages reach the batch exactly.
	pc.writeMessage(t, h.ID, strings.Repeat("q", quarter-protocol.MinMessageCost))
	pc.writeMessage(t, h.ID, "z")
	pc.writeMessage(t, h.ID, strings.Repeat("u", 100))
	got, err := s.Receive()
	require.NoError(t, err)
	require.Len(t, got, quarter-protocol.MinMessageCost)
	got, err = s.Receive()
	require.NoError(t, err)
	require.Equal(t, "z", string(got))
	id, w := pc.windowUpdate(t)
	assert.Equal(t, h.ID, id)
	assert.Equal(t, protocol.WindowUpdate{Returned: uint32(quarter)}, w)

	require.NoError(t, s.Close())
	// The unread message is dropped by Close if it has arrived, else by
	// the reader when it arrives for the ended stream: the WindowUpdate
	// comes before or after the Cancel, but returns the same bytes. The
	// connection window (1 MiB) had not reached its batch: the consumed
	// bytes go back with the dropped ones.
	var sawCancel, sawUpdate bool
	for !sawCancel || !sawUpdate {
		fh, payload := pc.read(t)
		switch fh.Type {
		case protocol.FrameCancel:
			require.False(t, sawCancel)
			sawCancel = true
			assert.Equal(t, h.ID, fh.ID)
		case protocol.FrameWindowUpdate:
			require.False(t, sawUpdate)
			sawUpdate = true
			require.NoError(t, protocol.ParseWindowUpdate(fh, payload, &w))
			assert.Zero(t, fh.ID)
			assert.Equal(t, protocol.WindowUpdate{Returned: uint32(quarter + 100)}, w)
		default:
			t.Fatalf("unexpected %s frame", fh.Type)
		}
	}
	_, err = s.Receive()
	requireCode(t, err, protocol.CodeCanceled)
}

// TestStreamCancelMidStream: cancelling the stream's context sends Cancel
// (reason caller; deadline for an expired deadline) and ends Receive and
// Header with the context's error.
func TestStreamCancelMidStream(t *testing.T) {
	p := startStreamPeer(t, streamCaps)
	c := dial(t, client.Options{}, p.addr)
	ctx, cancel := context.WithCancel(ctxTimeout(t, 10*time.Second))
	s, err := c.NewStream(ctx, "svc/M", client.StreamBidi)
	require.NoError(t, err)
	defer s.Close()
	pc := p.next(t)
	h, _ := pc.request(t)
	got := make(chan error, 1)
	go func() { _, err := s.Receive(); got <- err }()
	cancel()
	require.ErrorIs(t, recv(t, got), context.Canceled)
	ch, payload := pc.expect(t, protocol.FrameCancel)
	assert.Equal(t, h.ID, ch.ID)
	reason, err := protocol.ParseCancel(ch, payload)
	require.NoError(t, err)
	assert.Equal(t, protocol.CancelCaller, reason)
	_, err = s.Header()
	require.ErrorIs(t, err, context.Canceled)
	// A late frame for the ended stream is ignored, not a violation.
	pc.writeMessage(t, h.ID, "late")
	pc.writeEnd(t, h.ID)
	s2, err := c.NewStream(ctxTimeout(t, 10*time.Second), "svc/M", client.StreamBidi)
	require.NoError(t, err)
	defer s2.Close()
	// On the same connection: the new stream's Request, and the late
	// message's bytes back to the connection window (the reader's
	// WindowUpdate and the Request race: either order).
	var sawRequest, sawUpdate bool
	for !sawRequest || !sawUpdate {
		fh, payload := pc.read(t)
		switch fh.Type {
		case protocol.FrameRequest:
			require.False(t, sawRequest)
			sawRequest = true
			assert.Greater(t, fh.ID, h.ID)
		case protocol.FrameWindowUpdate:
			require.False(t, sawUpdate)
			sawUpdate = true
			var w protocol.WindowUpdate
			require.NoError(t, protocol.ParseWindowUpdate(fh, payload, &w))
			assert.Zero(t, fh.ID)
			assert.Equal(t, protocol.WindowUpdate{Returned: protocol.MinMessageCost}, w, "the charge of the 4-byte message")
		default:
			t.Fatalf("unexpected %s frame", fh.Type)
		}
	}
}

// TestStreamViolationsCloseTheConnection: stream frames that break the
// rules close the connection; the stream fails Unavailable, and the next
// stream gets a new connection.
func TestStreamViolationsCloseTheConnection(t *testing.T) {
	for name, violate := range map[string]func(t *testing.T, pc *peerConn, id uint64){
		"message without credit": func(t *testing.T, pc *peerConn, id uint64) {
			pc.writeMessage(t, id, strings.Repeat("a", protocol.InitialStreamWindow))
			pc.writeMessage(t, id, "b")
		},
		"message for a stream never opened": func(t *testing.T, pc *peerConn, id uint64) {
			pc.writeMessage(t, id+1, "x")
		},
		"end for a stream never opened": func(t *testing.T, pc *peerConn, id uint64) {
			pc.writeEnd(t, id+1)
		},
		"headers twice": func(t *testing.T, pc *peerConn, id uint64) {
			pc.writeMessage(t, id, "a", "h", "1")
			pc.writeMessage(t, id, "b", "h", "2")
		},
		"message with the client's EndStream": func(t *testing.T, pc *peerConn, id uint64) {
			f, _ := protocol.AppendMessage(nil, id, &protocol.Message{Body: []byte("x"), EndStream: true})
			pc.write(t, f)
		},
		"double return on the stream": func(t *testing.T, pc *peerConn, id uint64) {
			pc.writeWindowUpdate(t, id, 1, 0)
		},
		"double return on the connection": func(t *testing.T, pc *peerConn, id uint64) {
			pc.writeWindowUpdate(t, 0, 1, 0)
		},
		"window above MaxWindow": func(t *testing.T, pc *peerConn, id uint64) {
			pc.writeWindowUpdate(t, id, 0, protocol.MaxWindow)
		},
	} {
		t.Run(name, func(t *testing.T) {
			p := startStreamPeer(t, streamCaps)
			c := dial(t, client.Options{}, p.addr)
			s, err := c.NewStream(ctxTimeout(t, 10*time.Second), "svc/M", client.StreamBidi)
			require.NoError(t, err)
			defer s.Close()
			pc := p.next(t)
			h, _ := pc.request(t)
			violate(t, pc, h.ID)
			// Nothing is received before the close: a Receive could return
			// credit in time to make a message without credit legal.
			pc.closed(t)
			_, err = s.Receive() // what was queued was dropped at the end
			requireCode(t, err, protocol.CodeUnavailable)
			assert.Contains(t, err.Error(), "protocol violation")
			s2, err := c.NewStream(ctxTimeout(t, 10*time.Second), "svc/M", client.StreamBidi)
			require.NoError(t, err)
			defer s2.Close()
			p.next(t).request(t)
		})
	}
}

// TestStreamConnectionLost: a lost connection ends the stream Unavailable
// and a blocked Send returns.
func TestStreamConnectionLost(t *testing.T) {
	p := startStreamPeer(t, streamCaps)
	c := dial(t, client.Options{}, p.addr)
	s, err := c.NewStream(ctxTimeout(t, 10*time.Second), "svc/M", client.StreamBidi)
	require.NoError(t, err)
	defer s.Close()
	pc := p.next(t)
	pc.request(t)
	require.NoError(t, s.Send(make([]byte, protocol.InitialStreamWindow)))
	pc.message(t)
	sent := make(chan error, 1)
	go func() { sent <- s.Send([]byte("b")) }()
	waitBlockedIn(t, "flow.(*SendWindow).reserve")
	require.NoError(t, pc.nc.Close())
	requireCode(t, recv(t, sent), protocol.CodeUnavailable)
	_, err = s.Receive()
	requireCode(t, err, protocol.CodeUnavailable)
}

// TestStreamEndpointPolicyReportsOnce: the endpoint policy sees one
// attempt per stream, reported once when it ends: success for the
// server's End, the code of its Error, cancelled (not the endpoint's
// failure) for a cancel or Close, connection closed for a lost
// connection.
func TestStreamEndpointPolicyReportsOnce(t *testing.T) {
	p := startStreamPeer(t, streamCaps)
	c := dial(t, client.Options{}, p.addr)
	rec := newRecording("r")
	_, err := c.SetEndpointPolicy(rec)
	require.NoError(t, err)
	ctx := ctxTimeout(t, 10*time.Second)
	reports := func() []report { _, r := rec.snapshot(); return r }

	s, err := c.NewStream(ctx, "svc/M", client.StreamBidi)
	require.NoError(t, err)
	pc := p.next(t)
	h, _ := pc.request(t)
	assert.Empty(t, reports(), "nothing reported while the stream lives")
	pc.writeEnd(t, h.ID)
	_, err = s.Receive()
	require.ErrorIs(t, err, io.EOF)
	require.NoError(t, s.Close())
	r := reports()
	require.Len(t, r, 1)
	assert.Equal(t, spi.OutcomeSuccess, r[0].outcome.Kind)
	assert.Zero(t, r[0].outcome.Code)
	assert.True(t, r[0].outcome.ResponseObserved)

	s, err = c.NewStream(ctx, "svc/M", client.StreamBidi)
	require.NoError(t, err)
	h, _ = pc.request(t)
	f, _ := protocol.AppendError(nil, h.ID, &protocol.ErrorFrame{Code: protocol.CodeInternal, Message: "x"})
	pc.write(t, f)
	_, err = s.Receive()
	requireCode(t, err, protocol.CodeInternal)
	require.NoError(t, s.Close())
	r = reports()
	require.Len(t, r, 2)
	assert.Equal(t, spi.OutcomeRemoteError, r[1].outcome.Kind)
	assert.Equal(t, uint8(protocol.CodeInternal), r[1].outcome.Code)

	s, err = c.NewStream(ctx, "svc/M", client.StreamBidi)
	require.NoError(t, err)
	pc.request(t)
	require.NoError(t, s.Close())
	require.NoError(t, s.Close())
	pc.expect(t, protocol.FrameCancel)
	r = reports()
	require.Len(t, r, 3)
	assert.Equal(t, spi.OutcomeCancelled, r[2].outcome.Kind)

	s, err = c.NewStream(ctx, "svc/M", client.StreamBidi)
	require.NoError(t, err)
	pc.request(t)
	require.NoError(t, pc.nc.Close())
	_, err = s.Receive()
	requireCode(t, err, protocol.CodeUnavailable)
	require.NoError(t, s.Close())
	r = reports()
	require.Len(t, r, 4)
	assert.Equal(t, spi.OutcomeConnectionClosed, r[3].outcome.Kind)
	rec.requireExactlyOnce(t)
}

// TestStreamEmptyMessages: empty messages cost no credit and each is
// delivered (a run of them is held as one entry).
func TestStreamEmptyMessages(t *testing.T) {
	p := startStreamPeer(t, streamCaps)
	c := dial(t, client.Options{}, p.addr)
	s, err := c.NewStream(ctxTimeout(t, 10*time.Second), "svc/M", client.StreamServer)
	require.NoError(t, err)
	defer s.Close()
	require.NoError(t, s.Send(nil))
	pc := p.next(t)
	h, req := pc.request(t)
	assert.True(t, req.HasMessage)
	pc.writeMessage(t, h.ID, "", "h", "1")
	pc.writeMessage(t, h.ID, "")
	pc.writeMessage(t, h.ID, "")
	pc.writeMessage(t, h.ID, "x")
	pc.writeMessage(t, h.ID, "")
	pc.writeEnd(t, h.ID)
	var got []string
	for {
		m, err := s.Receive()
		if err != nil {
			require.ErrorIs(t, err, io.EOF)
			break
		}
		got = append(got, string(m))
	}
	assert.Equal(t, []string{"", "", "", "x", ""}, got)
}

// TestStreamDeadline: the context's deadline is the stream's budget; when
// it passes the stream is cancelled with reason deadline, Receive returns
// DeadlineExceeded and the policy is told deadline_exceeded.
func TestStreamDeadline(t *testing.T) {
	p := startStreamPeer(t, streamCaps)
	c := dial(t, client.Options{}, p.addr)
	rec := newRecording("r")
	_, err := c.SetEndpointPolicy(rec)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	s, err := c.NewStream(ctx, "svc/M", client.StreamBidi)
	require.NoError(t, err)
	defer s.Close()
	pc := p.next(t)
	h, req := pc.request(t)
	require.True(t, req.HasBudget)
	assert.Greater(t, req.Budget, 59*time.Minute)

	dctx, dcancel := context.WithTimeout(context.Background(), time.Second) // long enough to open on a busy machine
	defer dcancel()
	s2, err := c.NewStream(dctx, "svc/M", client.StreamBidi)
	require.NoError(t, err)
	defer s2.Close()
	h2, _ := pc.request(t)
	ch, payload := pc.expect(t, protocol.FrameCancel)
	assert.Equal(t, h2.ID, ch.ID)
	reason, err := protocol.ParseCancel(ch, payload)
	require.NoError(t, err)
	assert.Equal(t, protocol.CancelDeadline, reason)
	_, err = s2.Receive()
	require.ErrorIs(t, err, context.DeadlineExceeded)
	_, r := rec.snapshot()
	require.Len(t, r, 1)
	assert.Equal(t, spi.OutcomeDeadlineExceeded, r[0].outcome.Kind)

	// The first stream is untouched; its Header waits for the server.
	got := make(chan error, 1)
	go func() { _, err := s.Header(); got <- err }()
	waitBlockedIn(t, "client.(*Stream).Header")
	pc.writeMessage(t, h.ID, "m", "h", "v")
	require.NoError(t, recv(t, got))
}

// TestStreamFrameForAUnaryCallIsAViolation: with streaming negotiated, a
// Message for the id of a unary call waiting for its answer (below the
// last stream opened) is a violation: that id was never a stream.
func TestStreamFrameForAUnaryCallIsAViolation(t *testing.T) {
	p := startStreamPeer(t, streamCaps)
	c := dial(t, client.Options{}, p.addr)
	called := make(chan error, 1)
	go func() {
		_, err := c.CallRaw(ctxTimeout(t, 10*time.Second), "svc/M", nil)
		called <- err
	}()
	pc := p.next(t)
	uh, _ := pc.request(t)
	s, err := c.NewStream(ctxTimeout(t, 10*time.Second), "svc/M", client.StreamBidi)
	require.NoError(t, err)
	defer s.Close()
	sh, _ := pc.request(t)
	require.Greater(t, sh.ID, uh.ID)
	pc.writeMessage(t, uh.ID, "x")
	pc.closed(t)
	requireCode(t, recv(t, called), protocol.CodeUnavailable)
	_, err = s.Receive()
	requireCode(t, err, protocol.CodeUnavailable)
}
