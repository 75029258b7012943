package client_test

import (
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/client"
	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/server"
)

// TestAPanicOnTheReaderEndsTheConnectionNotTheProcess: a panic while the
// client handles a frame from the server (planted here with a hook on the
// first Response) fails that connection's call with Internal, is logged
// with its stack at Error, and costs nothing else: the next call
// reconnects and succeeds.
func TestAPanicOnTheReaderEndsTheConnectionNotTheProcess(t *testing.T) {
	ts := startServer(t, echoMux(nil), server.Options{})
	logs := &logRecorder{}
	c := dial(t, client.Options{Logger: slog.New(logs), Backoff: client.Backoff{Initial: time.Millisecond, Max: 10 * time.Millisecond}}, ts.addr)
	var armed atomic.Bool
	armed.Store(true)
	client.SetOnFrameHook(func(h protocol.Header) {
		if h.Type == protocol.FrameResponse && armed.CompareAndSwap(true, false) {
			panic("reader boom")
		}
	})
	defer client.SetOnFrameHook(nil)

	_, err := c.CallRaw(ctxTimeout(t, 10*time.Second), "echo/Echo", []byte("first"))
	st := requireCode(t, err, protocol.CodeInternal)
	assert.Contains(t, st.Message, "internal error while handling a frame from the server")
	assert.Contains(t, logs.text(), "panic while handling a frame")
	assert.Contains(t, logs.text(), "reader boom")

	got, err := c.CallRaw(ctxTimeout(t, 10*time.Second), "echo/Echo", []byte("second"))
	require.NoError(t, err)
	assert.Equal(t, "second", string(got))
}
