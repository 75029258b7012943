package server_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/kernel"
	"github.com/sluicerpc/sluice/limiters/concurrency"
	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/server"
	"github.com/sluicerpc/sluice/spi"
)

// streamLedgerOptions put every call under a global concurrency permit
// and stream/Hold under a limit of 1.
func streamLedgerOptions() kernel.Options {
	return kernel.Options{
		Global:  kernel.Rule{Limits: []spi.Spec{concurrency.Spec(1000)}},
		Methods: map[string]kernel.Rule{"stream/Hold": {Limits: []spi.Spec{concurrency.Spec(1)}}},
	}
}

// readUntilReturned reads stream frames until the WindowUpdates on the
// connection (id 0) returned want bytes, and returns the other frames.
// cost is the flow-control charge of an uncompressed message of n bytes.
func cost(n int) uint32 { return uint32(protocol.MessageCost(n, uint64(n))) }

func (c *rawClient) readUntilReturned(want uint32) []streamFrame {
	c.t.Helper()
	var got uint32
	var others []streamFrame
	for got < want {
		f := c.nextStream()
		if f.typ == protocol.FrameWindowUpdate && f.id == 0 {
			got += f.wu.Returned
			continue
		}
		others = append(others, f)
	}
	require.Equal(c.t, want, got, "connection bytes returned")
	return others
}

// TestEveryStreamEndReturnsEverything ends a stream each way it can end,
// with admission enabled, and checks after each that every permit,
// reservation and budget came back, and that the bytes of messages the
// handler never took went back to the connection's window.
func TestEveryStreamEndReturnsEverything(t *testing.T) {
	s := startServer(t, server.Options{Calls: server.CallCapacity{PerConnection: 8, PerServer: 100}})
	_, err := s.Admission().Enable(streamLedgerOptions())
	require.NoError(t, err)
	h := s.mux.st
	big := bytes.Repeat([]byte("x"), 1000)

	// holdWithData opens stream/Hold with a 100-byte first message and two
	// more of 1000 bytes that the handler never takes.
	holdWithData := func(c *rawClient, mod func(*protocol.Request)) uint64 {
		id := c.send("stream", "Hold", big[:100], func(r *protocol.Request) {
			r.Stream, r.HasMessage, r.Cancellable = true, true, false
			if mod != nil {
				mod(r)
			}
		})
		<-h.entered
		c.msg(id, big, false)
		c.msg(id, big, false)
		return id
	}
	ends := []struct {
		name string
		run  func(t *testing.T, c *rawClient)
	}{
		{"handler return", func(t *testing.T, c *rawClient) {
			id := c.open("stream", "Echo", []byte("a"), true)
			f, _ := c.nextOf()
			assert.Equal(t, "a", string(f.body))
			f, _ = c.nextOf()
			assert.Equal(t, protocol.FrameEnd, f.typ)
			assert.Equal(t, id, f.id)
		}},
		{"handler panic", func(t *testing.T, c *rawClient) {
			c.open("stream", "Panic", []byte("abc"), false)
			fs := c.readUntilReturned(cost(3))
			require.Len(t, fs, 1)
			assert.Equal(t, protocol.CodeInternal, fs[0].err.Code)
		}},
		{"cancel", func(t *testing.T, c *rawClient) {
			id := holdWithData(c, nil)
			// The messages were read before the Cancel: ping for a
			// round trip would not prove it; the Cancel itself comes
			// after them on the same connection.
			c.cancel(id)
			assert.ErrorIs(t, <-h.ctxErr, context.Canceled)
			fs := c.readUntilReturned(2100)
			require.Len(t, fs, 1)
			assert.Equal(t, protocol.CodeCanceled, fs[0].err.Code)
		}},
		{"deadline", func(t *testing.T, c *rawClient) {
			holdWithData(c, func(r *protocol.Request) { r.HasBudget, r.Budget = true, 50*time.Millisecond })
			assert.ErrorIs(t, <-h.ctxErr, context.DeadlineExceeded)
			fs := c.readUntilReturned(2100)
			require.Len(t, fs, 1)
			assert.Equal(t, protocol.CodeDeadlineExceeded, fs[0].err.Code)
		}},
		{"connection closed by the client", func(t *testing.T, c *rawClient) {
			holdWithData(c, nil)
			_ = c.nc.Close()
			assert.ErrorIs(t, <-h.ctxErr, context.Canceled)
		}},
		{"admission refusal", func(t *testing.T, c *rawClient) {
			id := holdWithData(c, nil)
			id2 := c.open("stream", "Hold", big[:10], false) // Hold's limit is 1
			c.msg(id2, big[:20], false)                      // ignored: the stream was refused
			fs := c.readUntilReturned(cost(10) + cost(20))
			require.Len(t, fs, 1)
			assert.Equal(t, id2, fs[0].id)
			assert.Equal(t, protocol.CodeResourceExhausted, fs[0].err.Code)
			assert.Equal(t, "concurrency", fs[0].err.Reason)
			c.cancel(id)
			<-h.ctxErr
			c.readUntilReturned(2100)
		}},
	}
	for _, end := range ends {
		t.Run(end.name, func(t *testing.T) {
			c := dialStream(t, s.addr)
			end.run(t, c)
			requireLedgerZero(t, s)
		})
	}
	assert.Zero(t, s.Stats().ProtocolViolations)
}

// TestStopDrainsStreams: Stop sends GoAway and lets a stream in flight
// finish; one that does not finish by Stop's deadline is cancelled, and
// everything is returned.
func TestStopDrainsStreams(t *testing.T) {
	t.Run("finishes within the drain", func(t *testing.T) {
		s := startServer(t, server.Options{})
		c := dialStream(t, s.addr)
		id := c.open("stream", "Echo", []byte("a"), false)
		f, _ := c.nextOf()
		require.Equal(t, "a", string(f.body))
		stopped := make(chan error, 1)
		go func() { stopped <- s.Stop(context.Background()) }()
		for h, _ := c.read(); h.Type != protocol.FrameGoAway; h, _ = c.read() {
		}
		c.msg(id, []byte("b"), true)
		f, _ = c.nextOf()
		assert.Equal(t, "b", string(f.body))
		f, _ = c.nextOf()
		assert.Equal(t, protocol.FrameEnd, f.typ)
		require.NoError(t, <-stopped)
		requireLedgerZero(t, s)
	})
	// A client that leaves during the drain can send nothing more: its
	// streams end with the connection at once, not at Stop's deadline
	// (the read loop used to end quietly while draining, leaving a
	// stream waiting for a message that could not come).
	t.Run("ended when the client leaves during the drain", func(t *testing.T) {
		s := startServer(t, server.Options{})
		c := dialStream(t, s.addr)
		c.open("stream", "Hold", []byte("a"), false)
		<-s.mux.st.entered
		stopped := make(chan error, 1)
		go func() { stopped <- s.Stop(context.Background()) }()
		for h, _ := c.read(); h.Type != protocol.FrameGoAway; h, _ = c.read() {
		}
		_ = c.nc.Close()
		assert.ErrorIs(t, <-s.mux.st.ctxErr, context.Canceled)
		require.NoError(t, <-stopped)
		requireLedgerZero(t, s)
	})
	t.Run("cancelled at the deadline", func(t *testing.T) {
		s := startServer(t, server.Options{})
		c := dialStream(t, s.addr)
		c.open("stream", "Hold", []byte("a"), false)
		<-s.mux.st.entered
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		assert.ErrorIs(t, s.Stop(ctx), context.DeadlineExceeded)
		assert.ErrorIs(t, <-s.mux.st.ctxErr, context.Canceled)
		requireLedgerZero(t, s)
	})
}

// TestStreamEndFailsASendLeftBehind: a handler that returns while a
// goroutine it started is blocked in Send (the window is spent) still
// ends its stream: the Send fails, End goes out, nothing is left held.
func TestStreamEndFailsASendLeftBehind(t *testing.T) {
	s := startServer(t, server.Options{})
	c := dialStream(t, s.addr)
	id := c.open("stream", "Leak", nil, true)
	f, _ := c.nextOf()
	require.Equal(t, protocol.FrameMessage, f.typ)
	require.Len(t, f.body, protocol.InitialStreamWindow)
	f, _ = c.nextOf()
	assert.Equal(t, protocol.FrameEnd, f.typ)
	assert.Equal(t, id, f.id)
	assert.Error(t, <-s.mux.st.recvErr, "the Send left behind fails")
	requireLedgerZero(t, s)
}

// TestStreamRefusedForItsMetadataReturnsItsMessage: a stream Request
// refused for its metadata (over the server's limits) gives its first
// message's bytes back to the connection window.
func TestStreamRefusedForItsMetadataReturnsItsMessage(t *testing.T) {
	lim := protocol.DefaultLimits()
	lim.MaxMetadataEntries = 1
	s := startServer(t, server.Options{Limits: &lim})
	c := dialStream(t, s.addr)
	c.send("stream", "Echo", []byte("abc"), func(r *protocol.Request) {
		r.Stream, r.HasMessage, r.Cancellable = true, true, false
		require.NoError(t, r.Metadata.Add("a", []byte("1")))
		require.NoError(t, r.Metadata.Add("b", []byte("2")))
	})
	fs := c.readUntilReturned(cost(3))
	require.Len(t, fs, 1)
	assert.Equal(t, protocol.CodeInvalidArgument, fs[0].err.Code)
	requireLedgerZero(t, s)
}
