package server_test

import (
	"bytes"
	"log/slog"
	"sync"
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

// lockedBuffer is a log destination safe for concurrent writers.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestAPanicOnTheReadLoopEndsTheConnectionNotTheProcess: a panic while a
// connection's frame is handled (here a partition selector's, which
// admission runs on the read loop) costs that connection only: its client
// gets an Internal connection Error and the close, the panic and its stack
// are logged at Error, Stats.ReadLoopPanics counts it, and the server
// serves the next connection.
func TestAPanicOnTheReadLoopEndsTheConnectionNotTheProcess(t *testing.T) {
	var logs lockedBuffer
	s := startServer(t, server.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	boom := kernel.Selector{Name: "boom", Version: 1, Key: func(f kernel.Facts) (string, bool) {
		if f.Metadata != nil {
			if v, ok := f.Metadata.Get("boom"); ok {
				panic("selector boom: " + v)
			}
		}
		return "", false
	}}
	_, err := s.Admission().Enable(kernel.Options{Partition: &kernel.PartitionPolicy{
		Selector: boom, MaxPartitions: 8, IdleTimeout: time.Minute,
		Rule: kernel.Rule{Limits: []spi.Spec{concurrency.Spec(4)}},
	}})
	require.NoError(t, err)

	c := dialRaw(t, s.addr)
	c.send("echo", "Say", []byte("x"), func(r *protocol.Request) {
		require.NoError(t, r.Metadata.Add("boom", []byte("now")))
	})
	e := c.expectClosed()
	require.NotNil(t, e, "a connection Error before the close")
	assert.Equal(t, protocol.CodeInternal, e.Code)
	assert.Equal(t, "internal error", e.Message, "the panic's text stays in the server's log")
	assert.EqualValues(t, 1, s.Stats().ReadLoopPanics)
	assert.Contains(t, logs.String(), "panic while handling a frame")
	assert.Contains(t, logs.String(), "selector boom: now")

	r := dialRaw(t, s.addr).call("echo", "Say", []byte("still here"))
	require.Nil(t, r.err)
	assert.Equal(t, "still here", string(r.body))
}
