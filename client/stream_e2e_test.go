package client_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/client"
	"github.com/sluicerpc/sluice/server"
)

// streamMux is the echo mux with the three stream shapes: echo/Bidi
// echoes every message, echo/Fill sends req[0] messages of 1000 bytes of
// their index, echo/Sum answers the total length of what it received.
func streamMux() *server.Mux {
	mux := echoMux(nil)
	mux.HandleBidiStream("echo", "Bidi", func(_ context.Context, s *server.Stream) error {
		for {
			m, err := s.Receive()
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return err
			}
			if err := s.Send(m); err != nil {
				return err
			}
		}
	})
	mux.HandleServerStream("echo", "Fill", func(_ context.Context, req []byte, s *server.Stream) error {
		for i := range int(req[0]) {
			if err := s.Send(bytes.Repeat([]byte{byte(i)}, 1000)); err != nil {
				return err
			}
		}
		return nil
	})
	mux.HandleClientStream("echo", "Sum", func(_ context.Context, s *server.Stream) ([]byte, error) {
		total := 0
		for {
			m, err := s.Receive()
			if errors.Is(err, io.EOF) {
				return []byte(strconv.Itoa(total)), nil
			}
			if err != nil {
				return nil, err
			}
			total += len(m)
		}
	})
	return mux
}

// TestStreamsEndToEnd: sluice's client and server, each stream shape over
// real TCP: a bidi echo of 2,000 messages of 4 KiB (far beyond the 64 KiB
// stream window, so credit must flow back both ways), a server stream of
// 200 messages, a client stream of 300; compressible bodies go
// compressed; afterwards the server holds nothing.
func TestStreamsEndToEnd(t *testing.T) {
	ts := startServer(t, streamMux(), server.Options{})
	c := dial(t, client.Options{}, ts.addr)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	s, err := c.NewStream(ctx, "echo/Bidi", client.StreamBidi)
	require.NoError(t, err)
	msg := bytes.Repeat([]byte("stream "), 600) // 4200 bytes, compressible
	sent := make(chan error, 1)
	go func() {
		for range 2000 {
			if err := s.Send(msg); err != nil {
				sent <- err
				return
			}
		}
		sent <- s.CloseSend()
	}()
	got := 0
	for {
		m, err := s.Receive()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		require.Equal(t, msg, m)
		got++
	}
	require.NoError(t, <-sent)
	assert.Equal(t, 2000, got)

	fill, err := c.NewStream(ctx, "echo/Fill", client.StreamServer)
	require.NoError(t, err)
	require.NoError(t, fill.Send([]byte{200}))
	for i := range 200 {
		m, err := fill.Receive()
		require.NoError(t, err)
		require.Equal(t, bytes.Repeat([]byte{byte(i)}, 1000), m)
	}
	_, err = fill.Receive()
	require.ErrorIs(t, err, io.EOF)

	sum, err := c.NewStream(ctx, "echo/Sum", client.StreamClient)
	require.NoError(t, err)
	for range 300 {
		require.NoError(t, sum.Send(msg))
	}
	require.NoError(t, sum.CloseSend())
	m, err := sum.Receive()
	require.NoError(t, err)
	assert.Equal(t, strconv.Itoa(300*len(msg)), string(m))
	_, err = sum.Receive()
	require.ErrorIs(t, err, io.EOF)

	require.Eventually(t, func() bool {
		st := ts.srv.Stats()
		g := st.Governor
		return st.ServerCalls.Active == 0 && st.ServerCalls.Reserved == 0 &&
			g.Decodes.Used == 0 && g.Retained.Used == 0 && g.Decoded.Used == 0 && g.Stream.Used == 0
	}, 10*time.Second, time.Millisecond, "%+v", ts.srv.Stats())
	assert.NotZero(t, ts.srv.Stats().Decompressions, "compressible messages went compressed")
}

// TestStreamCancelledMidwayEndToEnd: a client that cancels a bidi stream
// in the middle leaves the server holding nothing, and the connection
// serves the next call.
func TestStreamCancelledMidwayEndToEnd(t *testing.T) {
	ts := startServer(t, streamMux(), server.Options{})
	c := dial(t, client.Options{}, ts.addr)
	ctx, cancel := context.WithCancel(context.Background())
	s, err := c.NewStream(ctx, "echo/Bidi", client.StreamBidi)
	require.NoError(t, err)
	for range 10 {
		require.NoError(t, s.Send([]byte("x")))
	}
	_, err = s.Receive()
	require.NoError(t, err)
	cancel()
	// Echoes already received may still come out; then the cancel.
	for i := 0; ; i++ {
		_, err = s.Receive()
		if err != nil {
			break
		}
		require.Less(t, i, 9, "more echoes than were sent")
	}
	require.ErrorIs(t, err, context.Canceled)
	out, err := c.CallRaw(ctxTimeout(t, 10*time.Second), "echo/Echo", []byte("after"))
	require.NoError(t, err)
	assert.Equal(t, "after", string(out))
	require.Eventually(t, func() bool {
		st := ts.srv.Stats()
		return st.ServerCalls.Active == 0 && st.ServerCalls.Reserved == 0 && st.Governor.Stream.Used == 0
	}, 10*time.Second, time.Millisecond, "%+v", ts.srv.Stats())
}
