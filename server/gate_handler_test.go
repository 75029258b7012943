package server_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/kernel"
	"github.com/sluicerpc/sluice/limiters/concurrency"
	"github.com/sluicerpc/sluice/server"
	"github.com/sluicerpc/sluice/spi"
)

// gateHandlers serve "gate/Wait", a handler that each test releases call
// by call: every call that reaches the handler is announced on entered
// with its CallInfo, and returns its request body when the test closes its
// release channel or when its context ends. Calls that never reach the
// handler (refused, cancelled while queued) announce nothing.
type gateHandlers struct {
	entered chan gateEntry
}

// gateEntry is one call inside gate/Wait.
type gateEntry struct {
	info    server.CallInfo
	release chan struct{} // close to let the handler return
	ctxErr  chan error    // the handler's ctx.Err() as it returns
}

func newGateMux(h *gateHandlers) *server.Mux {
	mux := server.NewMux()
	mux.HandleRaw("gate", "Wait", func(ctx context.Context, req []byte) ([]byte, error) {
		info, _ := server.CallInfoFromContext(ctx)
		e := gateEntry{info: info, release: make(chan struct{}), ctxErr: make(chan error, 1)}
		h.entered <- e
		select {
		case <-e.release:
		case <-ctx.Done():
		}
		e.ctxErr <- ctx.Err()
		return req, nil
	})
	return mux
}

// enter returns the next call to reach gate/Wait, failing after a
// generous hang guard.
func (h *gateHandlers) enter(t testing.TB) gateEntry {
	t.Helper()
	select {
	case e := <-h.entered:
		return e
	case <-time.After(30 * time.Second):
		t.Fatal("no call reached gate/Wait")
		return gateEntry{}
	}
}

// serveGate serves gate/Wait with o on l until the test ends. The
// testServer's mux is nil: its handlers are h.
func serveGate(t testing.TB, l net.Listener, o server.Options) (*testServer, *gateHandlers) {
	t.Helper()
	h := &gateHandlers{entered: make(chan gateEntry, 64)}
	srv, err := server.New(newGateMux(h), o)
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(l) }()
	t.Cleanup(func() {
		_ = srv.Close()
		require.ErrorIs(t, <-done, server.ErrServerClosed)
	})
	return &testServer{Server: srv, addr: l.Addr().String()}, h
}

// oneAtATime is the admission program of the queued-call tests: one call
// of gate/Wait at a time, the others waiting in a queue whose delay (an
// hour) never ends a test's wait by itself.
func oneAtATime() *kernel.Options {
	return &kernel.Options{
		Methods: map[string]kernel.Rule{"gate/Wait": {Limits: []spi.Spec{concurrency.Spec(1)}}},
		Queue:   kernel.QueuePolicy{MaxQueuedCalls: 8, MaxQueuedBytes: 1 << 20, MaxQueueDelay: time.Hour},
	}
}

// requireQueued waits until exactly n calls wait in the admission queue.
// Only the test's next step can take a call out of the queue, so the
// condition, once reached, holds; the timeout is a hang guard.
func requireQueued(t testing.TB, s *testServer, n int) {
	t.Helper()
	require.Eventually(t, func() bool { return s.Stats().Admission.QueuedCalls == n }, 30*time.Second, time.Millisecond,
		"queued calls: %d, want %d", s.Stats().Admission.QueuedCalls, n)
}
