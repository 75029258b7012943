package client_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/client"
	"github.com/sluicerpc/sluice/kernel"
	"github.com/sluicerpc/sluice/limiters/tokenbucket"
	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/server"
	"github.com/sluicerpc/sluice/spi"
)

// TestRetryAfterIsNotSleptWithoutAttemptsLeft: MaxAttempts 1 against a
// bucket of one token per 2 s fails at once with the server's refusal and
// its hint, instead of sleeping the hint for an attempt it may not make.
func TestRetryAfterIsNotSleptWithoutAttemptsLeft(t *testing.T) {
	ts := startServer(t, echoMux(nil), server.Options{})
	_, err := ts.srv.Admission().Enable(kernel.Options{Methods: map[string]kernel.Rule{
		"echo/Echo": {Limits: []spi.Spec{tokenbucket.Spec(1, 1, 2*time.Second)}},
	}})
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		opts client.Options
		call []client.CallOption
	}{
		{"Options.MaxAttempts", client.Options{MaxAttempts: 1}, nil},
		{"the MaxAttempts call option", client.Options{}, []client.CallOption{client.MaxAttempts(1)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dial(t, tc.opts, ts.addr)
			_, _ = c.CallRaw(ctxTimeout(t, 5*time.Second), "echo/Echo", nil, tc.call...) // spends the token, if any is left
			start := time.Now()
			_, err := c.CallRaw(ctxTimeout(t, 5*time.Second), "echo/Echo", nil, tc.call...)
			elapsed := time.Since(start)
			st := requireCode(t, err, protocol.CodeResourceExhausted)
			assert.Greater(t, st.RetryAfter, time.Second, "the refusal carries its hint")
			assert.Less(t, elapsed, time.Second, "the hint was slept although no attempt was left")
		})
	}
}

// TestRetryAfterIsNotSleptPastTheDeadline: a hint that fits the deadline
// but leaves no room for another attempt (as long as the refused one took)
// is not slept: the call fails at once with the refusal.
func TestRetryAfterIsNotSleptPastTheDeadline(t *testing.T) {
	fs := startFakeServer(t, func(_ int, id uint64, w func([]byte)) {
		time.Sleep(300 * time.Millisecond)
		f, _ := protocol.AppendError(nil, id, &protocol.ErrorFrame{Code: protocol.CodeResourceExhausted, Message: "busy", Reason: "concurrency", RetryAfter: time.Second})
		w(f)
	})
	c := dial(t, client.Options{}, fs.addr)
	start := time.Now()
	// 1.5 s: after the first attempt (300 ms), the 1 s hint fits, but not
	// the hint and another 300 ms attempt.
	_, err := c.CallRaw(ctxTimeout(t, 1500*time.Millisecond), "svc/M", nil)
	elapsed := time.Since(start)
	st := requireCode(t, err, protocol.CodeResourceExhausted)
	assert.Equal(t, time.Second, st.RetryAfter)
	assert.Less(t, elapsed, time.Second, "the hint was slept although no attempt fits after it")
	assert.Len(t, fs.ids(), 1)
}
