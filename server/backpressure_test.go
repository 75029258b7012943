package server_test

import (
	"bytes"
	"runtime"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/kernel/governor"
	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/server"
)

// A client that pipelines requests and never reads stops being read once
// its unsent answers reach the write buffer's bound: the server holds a
// bounded number of goroutines and bytes for it, and when it reads again
// every request is answered, none refused, none lost. (Before, the server
// kept reading: 200,000 such requests made 166,000 goroutines and 955 MB.)
// The call capacity is set to its maximum so that only backpressure
// bounds what the server holds.
func TestAClientThatNeverReadsIsNoLongerRead(t *testing.T) {
	// 12,000 answers of 4 KiB are 48 MiB: far beyond what the loopback
	// socket buffers hold (about 36 MiB here), so the server's writer
	// fills and stays full while the client does not read.
	const n = 12_000
	unbounded := server.CallCapacity{PerConnection: governor.MaxCallCapacity, PerServer: governor.MaxCallCapacity}
	s := startServer(t, server.Options{WriteTimeout: -1, KeepaliveInterval: -1, Calls: unbounded})
	c := dialRaw(t, s.addr)
	baseG := runtime.NumGoroutine()
	baseHeap := liveHeap()

	body := bytes.Repeat([]byte("x"), 4<<10)
	si, mi := c.method("echo", "Say")
	sent := make(chan error, 1)
	go func() {
		_ = c.nc.SetWriteDeadline(time.Time{}) // the server stops reading for a while
		var buf []byte
		for id := uint64(1); id <= 2*n; id += 2 {
			buf, _ = protocol.AppendRequest(buf[:0], id, &protocol.Request{Service: si, Method: mi, Body: body})
			if _, err := c.nc.Write(buf); err != nil {
				sent <- err
				return
			}
		}
		sent <- nil
	}()

	require.Eventually(t, func() bool { return s.Stats().Backpressure > 0 }, 60*time.Second, time.Millisecond,
		"the server never stopped reading a client that does not read")
	// The server now holds at most the calls blocked on its writer.
	g, heap := runtime.NumGoroutine()-baseG, liveHeap()-baseHeap
	t.Logf("paused: %d calls read, %d goroutines and %.1f MiB of heap more than before", s.Stats().Calls, g, float64(heap)/(1<<20))
	assert.Less(t, g, 2000, "goroutines held for a client that does not read")
	assert.Less(t, heap, int64(64<<20), "heap held for a client that does not read")

	// The client reads again: every request is answered.
	for i := range n {
		r := c.next()
		require.Nil(t, r.err, "answer %d", i)
		require.Len(t, r.body, len(body))
	}
	require.NoError(t, <-sent)
	assert.Empty(t, s.Stats().Refusals)
	requireLedgerZero(t, s)
}

// A connection whose writes make no progress for the write timeout is
// closed, and its calls give back everything they hold.
func TestAStalledWriterClosesItsConnection(t *testing.T) {
	s, sl := startStallServer(t, server.Options{WriteTimeout: 100 * time.Millisecond, KeepaliveInterval: -1})
	c := dialRaw(t, s.addr)
	sl.stallWrites()
	c.send("echo", "Say", []byte("never delivered"), nil)
	require.Eventually(t, func() bool { return s.Stats().Connections == 0 }, 20*time.Second, time.Millisecond,
		"a connection whose writes stall stays open")
	assert.EqualValues(t, 1, s.Stats().WriteTimeouts)
	requireLedgerZero(t, s)
	c.expectClosed()
}

// The keepalive Ping never blocks a goroutine: with the writer full and
// stalled, the watchdog still runs and closes the silent connection after
// its two intervals. (Before, the Ping's Write blocked the watchdog's
// goroutine forever and the connection stayed open.) On synctest's clock
// and the in-memory network, whose writes block until the peer reads: the
// test client never reads, and its setup takes no time, so the writer is
// full before the first keepalive tick.
func TestKeepaliveNeverBlocksOnAFullWriter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := startPipeServer(t, server.Options{
			WriteTimeout: -1, KeepaliveInterval: time.Second, IdleTimeout: -1,
			WriteBufferSize: 512 << 10,
		})
		c := s.dialRaw(t)
		// The first answer (256 KiB, half the buffer) blocks in the
		// flush. Two held calls of 900 KiB each are read while nothing
		// is pending, so the reader waits for the next frame, not for
		// the writer. Released, the first of them fills the buffer on
		// its own and the second waits for space: the writer is full,
		// and a blocking Ping would wait too.
		c.send("echo", "Say", make([]byte, 256<<10), nil)
		synctest.Wait()
		big := make([]byte, 900<<10)
		c.send("echo", "Hold", big, nil)
		c.send("echo", "Hold", big, nil)
		<-s.mux.entered
		<-s.mux.entered
		close(s.mux.block)
		synctest.Wait()
		require.NotZero(t, s.Stats().Connections)

		time.Sleep(3 * time.Second) // two keepalive intervals and then some
		synctest.Wait()
		require.Zero(t, s.Stats().Connections, "the keepalive watchdog did not close a silent connection behind a full writer")
		for _, g := range goroutineStacks() {
			assert.NotContains(t, g, "(*conn).tick", "a watchdog goroutine is still blocked")
		}
		assert.Zero(t, s.Stats().Backpressure, "the reader was not paused: the keepalive judged the connection")
		requireLedgerZero(t, s.testServer)
	})
}

// 100,000 one-way calls sent at once to a handler that blocks: the default
// call capacity refuses (drops) those beyond it, so they never become
// 100,000 goroutines; when the handlers return, nothing is held.
func TestOneWayFloodIsBoundedByTheDefaultCallCapacity(t *testing.T) {
	const n = 100_000
	s := startServer(t, server.Options{})
	c := dialRaw(t, s.addr)
	baseG := runtime.NumGoroutine()
	si, mi := c.method("echo", "Hold")
	var stream []byte
	for id := uint64(1); id <= 2*n; id += 2 {
		stream, _ = protocol.AppendRequest(stream, id, &protocol.Request{Service: si, Method: mi, OneWay: true})
	}
	c.write(stream)
	limit := server.DefaultCallsPerConnection
	require.Eventually(t, func() bool {
		st := s.Stats()
		return st.OneWayDropped+uint64(st.ServerCalls.Active) == n
	}, 60*time.Second, time.Millisecond, "the flood was not all handled")
	st := s.Stats()
	assert.EqualValues(t, limit, st.ServerCalls.Active, "one-way calls running")
	assert.EqualValues(t, n-limit, st.OneWayDropped)
	assert.EqualValues(t, n-limit, st.Refusals["call_capacity"])
	assert.LessOrEqual(t, runtime.NumGoroutine()-baseG, limit+8)
	close(s.mux.block)
	requireLedgerZero(t, s)
}

// liveHeap is the bytes of live heap objects after two collections
// (HeapAlloc). Not HeapInuse: that counts whole spans, so the
// fragmentation earlier tests leave (large compressed bodies, a codec's
// window) showed up as a cost of what is measured next.
func liveHeap() int64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

func goroutineStacks() []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return strings.Split(string(buf[:n]), "\n\n")
		}
		buf = make([]byte, 2*len(buf))
	}
}
