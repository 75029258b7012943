package server_test

import (
	"log/slog"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/server"
)

// emfileListener fails its first n Accepts as a process out of file
// descriptors does, then accepts for real.
type emfileListener struct {
	net.Listener
	left atomic.Int32
}

func (l *emfileListener) Accept() (net.Conn, error) {
	if l.left.Add(-1) >= 0 {
		return nil, &net.OpError{Op: "accept", Net: "tcp", Addr: l.Addr(), Err: os.NewSyscallError("accept4", syscall.EMFILE)}
	}
	return l.Listener.Accept()
}

// TestServeSurvivesRunningOutOfFileDescriptors (issue 26 section 2):
// Accept failing with EMFILE five times in a row no longer ends Serve: it
// backs off (5, 10, 20, 40, 80 ms), counts each failure, logs one line for
// the burst, and serves the next connection. Before, Serve returned the
// error and `sluice serve` exited.
func TestServeSurvivesRunningOutOfFileDescriptors(t *testing.T) {
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	l := &emfileListener{Listener: tcp}
	l.left.Store(5)
	var logs lockedBuffer
	s := serveOn(t, l, server.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))}) // its cleanup requires Serve to end with ErrServerClosed
	c := dialRaw(t, s.addr)
	assert.Equal(t, "x", string(c.call("echo", "Say", []byte("x")).body))
	assert.Equal(t, uint64(5), s.Stats().AcceptErrors)
	out := logs.String()
	assert.Equal(t, 1, strings.Count(out, "accept failed"), "one line for the burst:\n%s", out)
	assert.Contains(t, out, "too many open files")
}
