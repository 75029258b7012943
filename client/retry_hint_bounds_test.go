package client_test

import (
	"context"
	"log/slog"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/client"
	"github.com/sluicerpc/sluice/protocol"
)

// largestHint is the largest retry-after an Error frame carries: 2^63-1
// nanoseconds, in whole microseconds.
const largestHint = time.Duration(math.MaxInt64/1000) * time.Microsecond

// refusingServer answers every call with a ResourceExhausted refusal
// (with a reason: it never ran) carrying hint.
func refusingServer(t *testing.T, hint time.Duration) *fakeServer {
	return startFakeServer(t, func(_ int, id uint64, w func([]byte)) {
		f, err := protocol.AppendError(nil, id, &protocol.ErrorFrame{Code: protocol.CodeResourceExhausted, Message: "busy", Reason: "concurrency", RetryAfter: hint})
		require.NoError(t, err)
		w(f)
	})
}

// The largest hint the protocol carries is compared with the deadline,
// never added to the time an attempt took: the sum wrapped negative, the
// hint "fit" any deadline, and a call with a deadline of 20 s slept to
// it. It fails at once with the server's refusal (here with MaxRetryWait
// set above any hint, so that only the deadline decides).
func TestTheLargestHintDoesNotWrapTheDeadlineCheck(t *testing.T) {
	fs := refusingServer(t, largestHint)
	c := dial(t, client.Options{MaxRetryWait: math.MaxInt64}, fs.addr)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := c.CallRaw(ctx, "svc/M", nil)
	st := requireCode(t, err, protocol.CodeResourceExhausted)
	assert.Equal(t, largestHint, st.RetryAfter)
	assert.Len(t, fs.ids(), 1, "one attempt, the hint not waited")
	assert.NoError(t, ctx.Err())
}

// A call without a deadline does not sleep a hint above MaxRetryWait
// (default 30 s; a server could ask for 292 years): it fails at once with
// the refusal, and the client logs it at the 1st, 2nd, 4th ... such hint.
// A hint within the cap is still waited (MaxRetryWait negative: never).
func TestHintsAboveMaxRetryWaitAreNotWaited(t *testing.T) {
	fs := refusingServer(t, time.Hour)
	logs := &logRecorder{}
	c := dial(t, client.Options{Logger: slog.New(logs)}, fs.addr)
	for range 3 {
		_, err := c.CallRaw(context.Background(), "svc/M", nil)
		st := requireCode(t, err, protocol.CodeResourceExhausted)
		assert.Equal(t, time.Hour, st.RetryAfter)
	}
	assert.Len(t, fs.ids(), 3, "one attempt per call")
	assert.Equal(t, 2, logs.count("retry hint above MaxRetryWait"), "the 1st and the 2nd, not the 3rd")
	assert.Contains(t, logs.text(), "max_retry_wait=30s")

	never := dial(t, client.Options{MaxRetryWait: -1}, refusingServer(t, time.Millisecond).addr)
	_, err := never.CallRaw(context.Background(), "svc/M", nil)
	requireCode(t, err, protocol.CodeResourceExhausted)
}

// count is the number of lines that contain s.
func (r *logRecorder) count(s string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, l := range r.lines {
		if strings.Contains(l, s) {
			n++
		}
	}
	return n
}
