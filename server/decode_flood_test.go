package server_test

import (
	"bufio"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/codecs"
	"github.com/sluicerpc/sluice/kernel"
	"github.com/sluicerpc/sluice/kernel/governor"
	"github.com/sluicerpc/sluice/limiters/concurrency"
	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/server"
	"github.com/sluicerpc/sluice/spi"
)

// TestACapacityRefusedCompressedFloodLeavesNothingBehind: 100,000
// compressed requests (one in ten one-way) against a full call capacity
// are each refused without a decode, and afterwards every counter and
// budget is back at zero.
func TestACapacityRefusedCompressedFloodLeavesNothingBehind(t *testing.T) {
	const n = 100_000
	s := startInstrumented(t, server.Options{Calls: server.CallCapacity{PerServer: 1}})
	holder := s.dial(t)
	holder.send("echo", "Hold", nil, nil)
	<-s.mux.entered

	c := s.dial(t)
	si, mi := c.method("echo", "Say")
	body := compressible(2048)
	z := compress(t, codecs.Zstd(), body)
	var wg sync.WaitGroup
	wg.Go(func() {
		w := bufio.NewWriterSize(c.nc, 64<<10)
		var frame []byte
		for id := uint64(1); id <= n; id++ {
			r := protocol.Request{Service: si, Method: mi, Body: z, Compressed: true, CodecID: 1, OriginalLength: uint32(len(body)), Cancellable: true}
			if id%10 == 0 {
				r.OneWay, r.Cancellable = true, false
			}
			frame, _ = protocol.AppendRequest(frame[:0], id, &r)
			if _, err := w.Write(frame); err != nil {
				t.Errorf("write: %v", err)
				return
			}
		}
		if err := w.Flush(); err != nil {
			t.Errorf("flush: %v", err)
		}
	})
	c.nextID = n
	for range n - n/10 {
		r := c.next()
		require.NotNil(t, r.err)
		require.Equal(t, governor.CallCapacityReason, r.err.Reason)
	}
	wg.Wait()
	r := c.call("echo", "Say", []byte("x")) // after every one-way frame
	require.NotNil(t, r.err)
	decodes, decoded := s.decodes()
	assert.Zero(t, decodes)
	assert.Zero(t, decoded)
	st := s.Stats()
	assert.Equal(t, uint64(n+1), st.Refusals[governor.CallCapacityReason])
	assert.Equal(t, uint64(n/10), st.OneWayDropped)
	assert.Zero(t, st.Decompressions)
	assert.Equal(t, governor.Snapshot{
		Decodes:  governor.BudgetSnapshot{Limit: governor.DefaultLimits().Decodes},
		Retained: governor.BudgetSnapshot{Limit: governor.DefaultLimits().RetainedBytes},
		Decoded:  governor.BudgetSnapshot{Limit: governor.DefaultLimits().DecodedBytes},
		Stream:   governor.BudgetSnapshot{Limit: governor.DefaultLimits().StreamBytes},
	}, st.Governor)
	close(s.mux.block)
	require.Nil(t, holder.next().err)
	requireLedgerZero(t, s.testServer)
}

// TestAdmissionChangesWhileCompressedRequestsQueueDecodeEachOnce: while
// compressed requests wait in the admission queue, admission is updated,
// disabled and enabled again; every request is answered once, and each
// one that ran was decoded exactly once (none twice, none skipped).
func TestAdmissionChangesWhileCompressedRequestsQueueDecodeEachOnce(t *testing.T) {
	const queued = 8
	s := startInstrumented(t, server.Options{Admission: globalConcurrency(1, 64)})
	holder := s.dial(t)
	holder.send("echo", "Hold", nil, nil)
	<-s.mux.entered

	c := s.dial(t)
	want := map[uint64][]byte{}
	for i := range queued {
		body := compressible(4096 + i)
		id := c.send("echo", "Say", compress(t, codecs.Zstd(), body), compressed(c.codecID("zstd"), len(body)))
		want[id] = body
	}
	require.Eventually(t, func() bool { return s.Stats().Admission.QueuedCalls == queued }, 10*time.Second, time.Millisecond)
	n, _ := s.decodes()
	require.Zero(t, n, "nothing decoded while queued")

	gen := s.Admission().Generation()
	o := globalConcurrency(2, 64)
	gen, err := s.Admission().Update(gen, *o)
	require.NoError(t, err)
	got := map[uint64][]byte{}
	r := c.next() // the raise lets one queued call through
	require.Nil(t, r.err)
	got[r.id] = c.decodeResponse(r)
	_, err = s.Admission().Disable()
	require.NoError(t, err) // the queued calls are granted
	for len(got) < queued {
		r := c.next()
		require.Nil(t, r.err, "%+v", r.err)
		_, dup := got[r.id]
		require.False(t, dup, "call %d answered twice", r.id)
		got[r.id] = c.decodeResponse(r)
	}
	assert.Equal(t, want, got)
	n, _ = s.decodes()
	assert.Equal(t, int64(queued), n, "each call decoded exactly once")
	assert.Equal(t, uint64(queued), s.Stats().Decompressions)
	_, err = s.Admission().Enable(kernel.Options{Global: kernel.Rule{Limits: []spi.Spec{concurrency.Spec(4)}}})
	require.NoError(t, err)
	close(s.mux.block)
	require.Nil(t, holder.next().err)
	requireLedgerZero(t, s.testServer)
}
