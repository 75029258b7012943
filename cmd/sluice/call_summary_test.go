package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/protocol/status"
)

// A call is refused when the answer carries a reason (it never ran),
// canceled when the command was interrupted, and failed otherwise.
func TestCallOutcomeClassification(t *testing.T) {
	for _, tc := range []struct {
		err     error
		outcome callOutcome
		key     string
	}{
		{nil, callSucceeded, ""},
		{&status.Error{Code: protocol.CodeResourceExhausted, Reason: "concurrency"}, callRefused, "concurrency"},
		{fmt.Errorf("wrapped: %w", &status.Error{Code: protocol.CodeResourceExhausted, Reason: "call_capacity"}), callRefused, "call_capacity"},
		{&status.Error{Code: protocol.CodeUnavailable, Reason: "draining"}, callRefused, "draining"},
		{context.Canceled, callCanceled, ""},
		{fmt.Errorf("sluice client: %w", context.Canceled), callCanceled, ""},
		{status.New(protocol.CodeCanceled, "call canceled"), callCanceled, ""},
		{context.DeadlineExceeded, callFailed, "DeadlineExceeded"},
		{status.New(protocol.CodeUnavailable, "connection closed"), callFailed, "Unavailable"},
		{status.New(protocol.CodeResourceExhausted, "the request exceeds the server's maximum frame size"), callFailed, "ResourceExhausted"},
		{errors.New("broken pipe"), callFailed, "Unknown"},
	} {
		outcome, key := classify(tc.err)
		assert.Equal(t, tc.outcome, outcome, "%v", tc.err)
		assert.Equal(t, tc.key, key, "%v", tc.err)
	}
}

func TestCallSummaryPrint(t *testing.T) {
	s := newSummary(10)
	s.elapsed = 2 * time.Second
	for range 4 {
		s.add(nil, time.Second)
	}
	s.add(&status.Error{Code: protocol.CodeResourceExhausted, Reason: "rate"}, 0)
	s.add(&status.Error{Code: protocol.CodeResourceExhausted, Reason: "concurrency"}, 0)
	s.add(&status.Error{Code: protocol.CodeResourceExhausted, Reason: "concurrency"}, 0)
	s.add(context.Canceled, 0)
	s.add(status.New(protocol.CodeInternal, "handler panic: boom"), 0)
	var out bytes.Buffer
	s.print(&out)
	assert.Equal(t, "calls: 9 in 2s: 4 succeeded (2/s), 3 refused, 1 canceled, 1 failed\n"+
		"not started: 1 (interrupted)\n"+
		"latency of the successes: p50 1s, p99 1s, max 1s\n"+
		"refused (concurrency): 2\n"+
		"refused (rate): 1\n"+
		"failed (Internal): 1, the first: sluice: Internal: handler panic: boom\n", out.String())
	assert.False(t, s.ok())
}

// Failed calls make "sluice call" exit 1 and are listed by code with the
// first error.
func TestCallFailuresExitNonZero(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		onPipeNetwork(t)
		addr, _ := serveAtInBackground(t, "127.0.0.1:7878")
		code, stdout, _ := runCommand("call", "-addr", addr, "-sleep", "2s", "-timeout", "1s", "-n", "3", "-c", "3")
		assert.Equal(t, exitFail, code)
		assert.Contains(t, stdout, "calls: 3 in 1s: 0 succeeded (0/s), 0 refused, 0 canceled, 3 failed\n")
		assert.Contains(t, stdout, "failed (DeadlineExceeded): 3, the first: ")
		assert.NotContains(t, stdout, "latency")
	})
}

// An interrupted load: the calls in flight end canceled (neither refused
// nor failed), the others are not started, and the exit status is 1.
func TestCallInterruptedCountsCancellationsApart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		onPipeNetwork(t)
		addr, _ := serveAtInBackground(t, "127.0.0.1:7878")
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		time.AfterFunc(1500*time.Millisecond, cancel)
		var out, errOut bytes.Buffer
		code := run(ctx, []string{"call", "-addr", addr, "-sleep", "1s", "-n", "6", "-c", "2"}, &out, &errOut)
		assert.Equal(t, exitFail, code, errOut.String())
		assert.Contains(t, out.String(), "calls: 4 in 1.5s: 2 succeeded (1/s), 0 refused, 2 canceled, 0 failed\n")
		assert.Contains(t, out.String(), "not started: 2 (interrupted)\n")
	})
}

// The server's own summary at Stop counts the calls whose caller gave up
// while they waited apart from its refusals (server.Stats.Calls counts
// the waiter too: it went to a goroutine).
func TestServeSummarySeparatesCancellations(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		onPipeNetwork(t)
		stop := startServe(t, "127.0.0.1:7878", "-concurrency", "1", "-queue-calls", "1", "-queue-delay", "1h")
		holder := make(chan int, 1)
		go func() {
			code, _, _ := runCommand("call", "-addr", "127.0.0.1:7878", "-sleep", "3s")
			holder <- code
		}()
		synctest.Wait() // the holder runs; the next call waits in the queue
		waiter := make(chan int, 1)
		go func() {
			code, _, _ := runCommand("call", "-addr", "127.0.0.1:7878", "-sleep", "1s", "-timeout", "1s")
			waiter <- code
		}()
		synctest.Wait()
		code, _, _ := runCommand("call", "-addr", "127.0.0.1:7878", "-data", "x")
		assert.Equal(t, exitFail, code, "refused: the queue is full")
		assert.Equal(t, exitFail, <-waiter, "its deadline passed in the queue")
		assert.Equal(t, exitOK, <-holder)
		code, out, errOut := stop()
		assert.Equal(t, exitOK, code, errOut)
		assert.Contains(t, out, "sluice serve: stopped after 2 calls (1 refused: queue_full=1, 1 canceled)\n")
	})
}
