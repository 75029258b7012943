package decodemodel

import (
	"sync/atomic"
	"testing"
	"time"
)

// TestCancelDuringDecode checks each model's structural Cancel behaviour
// without timing: the client writes the Cancel from the decode-start hook
// of a 4 MiB body (16 quanta). A model whose reader is free (a, d) reads
// it while the decode runs, so the hook waits for the reader to have
// cancelled the call, and the decode must stop (status Cancelled); the
// polling reader (c) finds it at one of the decode's context checks; the
// inline reader (b) can read it only after the decode, which completes.
func TestCancelDuringDecode(t *testing.T) {
	body := Body("zstd", Payload(High, 4<<20))
	for _, m := range candidates {
		t.Run(m.String(), func(t *testing.T) {
			var client atomic.Pointer[clientConn] // set before the request is sent
			const id = 1
			read := make(chan struct{}, 1)
			h := &hooks{
				decodeStart: func(got uint32) {
					if got != id {
						return
					}
					if err := client.Load().sendCancel(id); err != nil {
						t.Error(err)
					}
					if m == ModelCall || m == ModelWorkers {
						<-read // the reader is free: it reads the Cancel now
					}
				},
				decodeEnd: func(uint32, error) {},
				cancelRead: func(got uint32) {
					if got == id {
						select {
						case read <- struct{}{}:
						default:
						}
					}
				},
			}
			srv, err := startServer(serverConfig{model: m, codecs: Codecs(), capacity: 8, hooks: h})
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Stop()
			cc, err := dial(srv.addr())
			if err != nil {
				t.Fatal(err)
			}
			client.Store(cc)
			defer cc.close()
			if err := cc.send(id, true, body); err != nil {
				t.Fatal(err)
			}
			st, err := cc.wait(0)
			if err != nil {
				t.Fatal(err)
			}
			want := statusCancelled
			if m == ModelInline {
				want = statusOK
			}
			if st != want {
				t.Fatalf("status %d, want %d", st, want)
			}
		})
	}
}

// TestRefusedRequestsAreNeverDecoded: with the call capacity full, no
// model decodes or copies a request; the reader refuses it first.
func TestRefusedRequestsAreNeverDecoded(t *testing.T) {
	body := Body("gzip", Payload(Low, 64<<10))
	for _, m := range Models {
		r, err := RunCell(Cell{Model: m, Codec: "gzip", Size: 64 << 10, Ratio: Low, Cancellable: true, Conc: 4, Refuse: true},
			body, time.Millisecond, time.Millisecond, 8)
		if err != nil {
			t.Fatal(err)
		}
		if r.Decodes != 0 || r.DecodedBytes != 0 || r.Status[statusRefused] != r.Calls {
			t.Fatalf("%v: %d decodes, %d bytes, statuses %v of %d", m, r.Decodes, r.DecodedBytes, r.Status, r.Calls)
		}
	}
}

// TestExecutorServesConnectionsRoundRobin: with one worker held busy, a
// connection that queued three calls before another queued one gets one
// turn, then the other connection, then its remaining calls.
func TestExecutorServesConnectionsRoundRobin(t *testing.T) {
	gate, busy := make(chan struct{}), make(chan struct{})
	order := make(chan uint32, 8)
	e := startExecutor(1, func(cl *call) {
		if cl.id == 0 {
			close(busy)
			<-gate
			return
		}
		order <- cl.id
	})
	qa, qb := newCallQueue(4), newCallQueue(4)
	e.enqueue(qa, &call{id: 0})
	<-busy // the worker holds call 0: qa's queue is empty again
	for _, id := range []uint32{1, 2, 3} {
		e.enqueue(qa, &call{id: id})
	}
	e.enqueue(qb, &call{id: 10})
	close(gate)
	want := []uint32{1, 10, 2, 3}
	for i, w := range want {
		if got := <-order; got != w {
			t.Fatalf("turn %d: call %d, want %d (order %v)", i, got, w, want)
		}
	}
	if left := e.stop(); len(left) != 0 {
		t.Fatalf("%d calls left after all ran", len(left))
	}
}
