package main

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/protocol/status"
)

func refusal(reason string) error {
	return &status.Error{Code: protocol.CodeResourceExhausted, Message: "admission refused", Reason: reason}
}

// The refusals the demo expects depend on what has been published: none
// before the first Enable, the rate reason only once a token bucket was.
// Every other error is unexpected and described with the step in force.
func TestDemoErrorCheckExpectsRefusalsByPhase(t *testing.T) {
	var c errorCheck
	c.add("shop/Browse", refusal("concurrency"))
	n, ex := c.unexpectedErrors()
	assert.Equal(t, int64(1), n, "no program could refuse before the first Enable")
	assert.Equal(t, []string{`shop/Browse before step 1: sluice: ResourceExhausted (concurrency): admission refused`}, ex)

	c.stepStarts("2 enable global=4")
	c.admission.Store(true)
	for _, r := range []string{"concurrency", "queue_full", "queue_timeout"} {
		c.add("shop/Browse", refusal(r))
	}
	assert.Equal(t, uint64(3), c.rejected())
	c.add("shop/Checkout", refusal("rate"))
	n, ex = c.unexpectedErrors()
	assert.Equal(t, int64(2), n, "no token bucket before step 9a")
	assert.Equal(t, `shop/Checkout in step "2 enable global=4": sluice: ResourceExhausted (rate): admission refused`, ex[1])

	c.rate.Store(true)
	c.add("shop/Browse", refusal("rate"))
	assert.Equal(t, uint64(4), c.rejected())

	for _, err := range []error{
		refusal("partition_capacity"), // no partitions in the demo
		refusal("call_capacity"),
		&status.Error{Code: protocol.CodeUnavailable, Reason: "unavailable"},
		&status.Error{Code: protocol.CodeUnavailable, Reason: "draining"},
		status.New(protocol.CodeUnavailable, "connection closed"),
		status.New(protocol.CodeInternal, "handler panic"),
		&protocol.ProtocolError{Reason: "bad frame"},
		context.Canceled, // the workers' context had not ended
		context.DeadlineExceeded,
		errors.New("io: read/write on closed pipe"),
	} {
		c.add("shop/Browse", err)
	}
	n, ex = c.unexpectedErrors()
	assert.Equal(t, int64(12), n)
	assert.Len(t, ex, maxExamples, "the first few are kept")
	assert.Equal(t, uint64(4), c.rejected(), "unexpected errors are not refusals")
}

// partition cuts the demo's client off its server: the connections dialed
// so far are closed and later dials are refused.
type partition struct {
	mu    sync.Mutex
	conns []net.Conn
	cut   bool
}

func (p *partition) install(t *testing.T) {
	prev := dialer
	dialer = func(ctx context.Context, addr string) (net.Conn, error) {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.cut {
			return nil, &net.OpError{Op: "dial", Net: "pipe", Err: syscall.ECONNREFUSED}
		}
		c, err := prev(ctx, addr)
		if err == nil {
			p.conns = append(p.conns, c)
		}
		return c, err
	}
	t.Cleanup(func() { dialer = prev })
}

func (p *partition) cutNow() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for _, c := range p.conns {
		_ = c.Close()
	}
}

// cutOnWrite cuts the partition when a written line contains marker.
type cutOnWrite struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	marker string
	p      *partition
	done   bool
}

func (w *cutOnWrite) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done && bytes.Contains(b, []byte(w.marker)) {
		w.done = true
		w.p.cutNow()
	}
	return w.buf.Write(b)
}

func (w *cutOnWrite) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// The connection between the demo's client and server is lost in step 3:
// the calls that fail are not refusals, so the demo fails (exit status 1)
// and says which errors it saw, even though every invariant of admission
// still holds.
func TestDemoFailsOnUnexpectedErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		onPipeNetwork(t)
		dir := t.TempDir()
		t.Chdir(dir)
		p := &partition{}
		p.install(t)
		out := &cutOnWrite{marker: "3 grow global=8", p: p}
		var errOut bytes.Buffer
		code := run(context.Background(), []string{"demo", "-workers", "8", "-step", "40ms", "-rate-step", "160ms", "-svg", ""}, out, &errOut)
		text := out.String()
		require.True(t, p.cut, text)
		assert.Equal(t, exitFail, code, "stdout:\n%s\nstderr:\n%s", text, errOut.String())
		assert.Regexp(t, `^sluice demo: \d+ calls ended with an unexpected error, the first: shop/(Browse|Checkout) in step "`, errOut.String())
		assert.Regexp(t, `(?m)^unexpected error: shop/(Browse|Checkout) in step "`, text)
		assert.Regexp(t, regexp.MustCompile(`invariants: over_admissions=0 counters_zero=true rate_over=0 unexpected_errors=[1-9]\d*$`), lastLine(text),
			"admission kept its invariants; the errors alone fail the run")
		assert.False(t, strings.Contains(text, "unexpected_errors=0"))
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		assert.Empty(t, entries, `-svg "" writes no chart`)
	})
}
