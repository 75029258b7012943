package client_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/client"
	"github.com/sluicerpc/sluice/server"
	"github.com/sluicerpc/sluice/spi"
)

// closingPolicy allows everything; its Close runs onClose.
type closingPolicy struct {
	n       atomic.Uint64
	closes  atomic.Int32
	onClose func()
}

func (p *closingPolicy) TryAcquire(string, string) spi.EndpointDecision {
	return spi.EndpointDecision{Allowed: true, Token: p.n.Add(1)}
}
func (p *closingPolicy) Report(spi.AttemptOutcome, uint64) {}
func (p *closingPolicy) Close() error {
	p.closes.Add(1)
	if p.onClose != nil {
		p.onClose()
	}
	return nil
}

// logRecorder is a slog handler that keeps every message with its
// attributes, one line each.
type logRecorder struct {
	mu    sync.Mutex
	lines []string
}

func (r *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *logRecorder) Handle(_ context.Context, rec slog.Record) error {
	var b strings.Builder
	b.WriteString(rec.Message)
	rec.Attrs(func(a slog.Attr) bool { b.WriteString(" " + a.String()); return true })
	r.mu.Lock()
	r.lines = append(r.lines, b.String())
	r.mu.Unlock()
	return nil
}
func (r *logRecorder) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *logRecorder) WithGroup(string) slog.Handler      { return r }
func (r *logRecorder) text() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.lines, "\n")
}

// within runs f and fails the test if it has not returned after d.
func within(t *testing.T, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s did not return within %v", what, d)
	}
}

// TestRetiredPolicyCloseMayReadTheClient: a retired policy's Close runs
// outside the client's locks: a Close that reads the client's current
// policy, when nothing was outstanding (so it runs at once), does not
// deadlock SetEndpointPolicy, DisableEndpointPolicy or Close.
func TestRetiredPolicyCloseMayReadTheClient(t *testing.T) {
	ts := startServer(t, echoMux(nil), server.Options{})
	c, err := client.Dial(ctxTimeout(t, 5*time.Second), []string{ts.addr}, client.Options{})
	require.NoError(t, err)
	seen := make(chan client.PolicySnapshot, 3)
	newPolicy := func() *closingPolicy {
		return &closingPolicy{onClose: func() { seen <- c.EndpointPolicy() }}
	}
	a, b, d := newPolicy(), newPolicy(), newPolicy()
	_, err = c.SetEndpointPolicy(a)
	require.NoError(t, err)
	var genB uint64
	within(t, 5*time.Second, "SetEndpointPolicy", func() { genB, err = c.SetEndpointPolicy(b) })
	require.NoError(t, err)
	assert.Equal(t, int32(1), a.closes.Load(), "nothing was outstanding: closed before SetEndpointPolicy returned")
	assert.Equal(t, client.PolicySnapshot{Generation: genB, Mode: client.PolicyCustom}, recv(t, seen), "A's Close sees B published")

	within(t, 5*time.Second, "DisableEndpointPolicy", func() { _, err = c.DisableEndpointPolicy() })
	require.NoError(t, err)
	assert.Equal(t, int32(1), b.closes.Load())
	assert.Equal(t, client.PolicyDisabled, recv(t, seen).Mode)

	_, err = c.SetEndpointPolicy(d)
	require.NoError(t, err)
	within(t, 5*time.Second, "Close", func() { err = c.Close() })
	require.NoError(t, err)
	assert.Equal(t, int32(1), d.closes.Load())
	recv(t, seen)
}

// TestSlowRetiredPolicyCloseDoesNotDelayACall: the call whose report ends
// the last hold on a retired policy returns without waiting for that
// policy's Close, which runs on a goroutine of the client's own; Client.Close
// waits for it.
func TestSlowRetiredPolicyCloseDoesNotDelayACall(t *testing.T) {
	blk := newBlocker(2)
	ts := startServer(t, echoMux(map[string]server.RawHandler{"echo/Block": blk.handle}), server.Options{})
	c, err := client.Dial(ctxTimeout(t, 5*time.Second), []string{ts.addr}, client.Options{})
	require.NoError(t, err)
	unblock := make(chan struct{})
	closing := make(chan struct{})
	a := &closingPolicy{onClose: func() { close(closing); <-unblock }}
	_, err = c.SetEndpointPolicy(a)
	require.NoError(t, err)

	done := make(chan error, 1)
	go func() {
		_, err := c.CallRaw(ctxTimeout(t, 10*time.Second), "echo/Block", nil)
		done <- err
	}()
	recv(t, blk.started)
	_, err = c.SetEndpointPolicy(&closingPolicy{})
	require.NoError(t, err)
	assert.Zero(t, a.closes.Load(), "A still has an attempt to hear from")
	close(blk.release)
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		close(unblock)
		t.Fatal("the call waited for the retired policy's Close")
	}
	recv(t, closing) // A's Close runs, after the call's report

	closed := make(chan struct{})
	go func() { _ = c.Close(); close(closed) }()
	select {
	case <-closed:
		t.Fatal("Client.Close returned before the retired policy's Close")
	case <-time.After(50 * time.Millisecond):
	}
	close(unblock)
	recv(t, closed)
	assert.Equal(t, int32(1), a.closes.Load())
}

// TestRetiredPolicyClosePanicIsRecovered: a panic in a retired policy's
// Close is recovered and logged, whether the policy was closed by
// SetEndpointPolicy (nothing outstanding) or after the report of an
// unrelated call.
func TestRetiredPolicyClosePanicIsRecovered(t *testing.T) {
	blk := newBlocker(2)
	ts := startServer(t, echoMux(map[string]server.RawHandler{"echo/Block": blk.handle}), server.Options{})
	logs := &logRecorder{}
	c := dial(t, client.Options{Logger: slog.New(logs)}, ts.addr)
	panics := func() { panic("close is broken") }

	_, err := c.SetEndpointPolicy(&closingPolicy{onClose: panics})
	require.NoError(t, err)
	require.NotPanics(t, func() { _, err = c.SetEndpointPolicy(&closingPolicy{onClose: panics}) })
	require.NoError(t, err)
	assert.Contains(t, logs.text(), "panicked in Close")

	// The current policy has an attempt in flight when it is replaced: the
	// call's report ends its last hold.
	done := make(chan error, 1)
	go func() {
		_, err := c.CallRaw(ctxTimeout(t, 10*time.Second), "echo/Block", nil)
		done <- err
	}()
	recv(t, blk.started)
	_, err = c.DisableEndpointPolicy()
	require.NoError(t, err)
	close(blk.release)
	require.NoError(t, recv(t, done))
	require.Eventually(t, func() bool { return strings.Count(logs.text(), "panicked in Close") == 2 }, 5*time.Second, time.Millisecond)
	assert.Contains(t, logs.text(), "close is broken")
	_, err = c.CallRaw(ctxTimeout(t, 5*time.Second), "echo/Echo", nil)
	require.NoError(t, err)
}
