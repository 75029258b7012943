package server_test

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/kernel"
	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/server"
)

// 100,000 refused requests, half refused for call capacity and half by
// admission, leave every counter, slot and reservation at zero, the
// goroutines as they were and the heap where it started (issue 11, item
// 12). Requests are sent in batches and every answer is read, so the
// connection never backs up.
func TestManyRefusalsLeaveNothingBehind(t *testing.T) {
	const total, batch = 100_000, 500
	rule := holdRule(1)
	s := startServer(t, server.Options{Calls: server.CallCapacity{PerConnection: 1}, Admission: &rule})
	c := dialRaw(t, s.addr)
	held := c.send("echo", "Hold", nil, nil) // holds echo/Hold's admission unit
	<-s.mux.entered

	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	goroutines := runtime.NumGoroutine()
	before := heap()
	refused := map[string]int{}
	for sent := 0; sent < total; sent += batch {
		for i := range batch {
			if i%2 == 0 {
				c.send("echo", "Hold", nil, nil) // admission: concurrency
			} else {
				c.send("echo", "Say", nil, nil) // passes admission; the held call fills the capacity
			}
		}
		for range batch {
			r := c.next()
			if r.err != nil {
				require.Equal(t, protocol.CodeResourceExhausted, r.err.Code)
				refused[r.err.Reason]++
			}
		}
	}
	assert.Equal(t, total/2, refused["concurrency"], "every Hold refused by admission")
	assert.Equal(t, total/2, refused["call_capacity"], "every Say refused for call capacity")
	after := heap()
	assert.Less(t, after, before+8<<20, "heap %d -> %d after %d refusals", before, after, total)
	assert.LessOrEqual(t, runtime.NumGoroutine(), goroutines+4, "goroutines left behind")

	close(s.mux.block)
	<-s.mux.ctxErr
	assert.Equal(t, held, c.next().id)
	requireLedgerZero(t, s)
	st := s.Stats()
	assert.Zero(t, st.ServerCalls.Active)
	assert.Zero(t, st.ServerCalls.Reserved)
	assert.EqualValues(t, total/2, st.Refusals["concurrency"])
	assert.EqualValues(t, total/2, st.Refusals["call_capacity"])
	for _, sc := range st.Admission.Scopes {
		if sc.Name == "method:echo/Hold/concurrency" {
			assert.Zero(t, sc.InUse)
		}
	}
	var k kernel.Stats = s.Admission().Stats()
	assert.Zero(t, k.DoubleReleases)
}
