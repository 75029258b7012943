package server_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
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

// recordingCodec is zstd that records, for every body it decodes to the
// end, the request id written at its start: each request must be decoded
// at most once, and exactly once if it was answered.
type recordingCodec struct {
	spi.Codec
	mu      sync.Mutex
	decoded map[string]int
}

func (c *recordingCodec) Decompress(ctx context.Context, dst, src []byte, limit int) ([]byte, error) {
	out, err := c.Codec.Decompress(ctx, dst, src, limit)
	if err == nil {
		id, _, _ := bytes.Cut(out[len(dst):], []byte{';'})
		c.mu.Lock()
		c.decoded[string(id)]++
		c.mu.Unlock()
	}
	return out, err
}

// TestDecodeStressUnderUpdatesCancelsAndStop: workers send compressed
// requests (valid, corrupt, cancelled at once, with tiny budgets, one-way)
// while admission is enabled, updated and disabled and the governor's and
// call capacity's bounds change; then the server stops with calls in
// flight. Every answer is the right one, no request is decoded twice, each
// answered one exactly once, and every counter and budget ends at zero.
func TestDecodeStressUnderUpdatesCancelsAndStop(t *testing.T) {
	const workers, perWorker = 6, 150
	rc := &recordingCodec{Codec: codecs.Zstd(), decoded: map[string]int{}}
	s := startServer(t, server.Options{
		Compression: codecs.Config{Codecs: []spi.Codec{rc}},
		Governor:    governor.Limits{Decodes: 2},
		Admission: &kernel.Options{
			Global: kernel.Rule{Limits: []spi.Spec{concurrency.Spec(3)}},
			Queue:  kernel.QueuePolicy{MaxQueuedCalls: 8, MaxQueuedBytes: 1 << 20, MaxQueueDelay: time.Second},
		},
	})
	stopUpdates := make(chan struct{})
	var updates sync.WaitGroup
	updates.Go(func() {
		r := rand.New(rand.NewPCG(1, 2))
		for i := 0; ; i++ {
			select {
			case <-stopUpdates:
				return
			default:
			}
			switch i % 5 {
			case 0:
				_, _ = s.Admission().Disable()
			case 1:
				_, _ = s.Admission().Enable(kernel.Options{Global: kernel.Rule{Limits: []spi.Spec{concurrency.Spec(int64(1 + r.IntN(4)))}},
					Queue: kernel.QueuePolicy{MaxQueuedCalls: 4, MaxQueuedBytes: 1 << 20, MaxQueueDelay: time.Second}})
			case 2:
				_ = s.SetGovernorLimits(governor.Limits{Decodes: int64(1 + r.IntN(3)), RetainedBytes: int64(2000 + r.IntN(100000)), DecodedBytes: int64(20000 + r.IntN(200000))})
			case 3:
				_ = s.SetCallCapacity(server.CallCapacity{PerConnection: 1 + r.IntN(4), PerServer: 2 + r.IntN(8)})
			case 4:
				if g := s.Admission().Generation(); s.Admission().Enabled() {
					_, _ = s.Admission().Update(g, kernel.Options{Global: kernel.Rule{Limits: []spi.Spec{concurrency.Spec(int64(1 + r.IntN(4)))}}})
				}
			}
			time.Sleep(200 * time.Microsecond)
		}
	})

	var answered sync.Map // request id -> true, for successful answers
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 7))
			c := dialOffering(t, s.addr, "zstd")
			for i := range perWorker {
				id := fmt.Sprintf("w%d-%d", w, i)
				body := append([]byte(id+";"), compressible(2000+r.IntN(20000))...)
				z := compress(t, codecs.Zstd(), body)
				kind := r.IntN(10)
				mod := compressed(1, len(body))
				switch kind {
				case 0: // corrupt
					z = z[:len(z)-2]
				case 1: // one-way
					mod = func(q *protocol.Request) { compressed(1, len(body))(q); q.OneWay, q.Cancellable = true, false }
				case 2: // a budget that may run out anywhere
					mod = func(q *protocol.Request) {
						compressed(1, len(body))(q)
						q.HasBudget, q.Budget = true, time.Duration(1+r.IntN(300))*time.Microsecond
					}
				}
				rid := c.send("echo", "Say", z, mod)
				if kind == 1 {
					continue
				}
				if kind == 3 {
					c.cancel(rid)
				}
				res := c.next()
				if res.id != rid {
					t.Errorf("answer for %d, want %d", res.id, rid)
					return
				}
				switch {
				case res.err == nil:
					if kind == 0 {
						t.Errorf("%s: a corrupt body was answered", id)
					}
					if got := c.decodeResponse(res); !bytes.Equal(got, body) {
						t.Errorf("%s: the answer is another body", id)
					}
					answered.Store(id, true)
				case res.err.Code == protocol.CodeInvalidArgument:
					if kind != 0 {
						t.Errorf("%s: a valid body refused as invalid: %s", id, res.err.Message)
					}
				case res.err.Code == protocol.CodeResourceExhausted, res.err.Code == protocol.CodeCanceled,
					res.err.Code == protocol.CodeDeadlineExceeded, res.err.Code == protocol.CodeUnavailable:
				default:
					t.Errorf("%s: unexpected answer %v %q", id, res.err.Code, res.err.Message)
				}
			}
			// Leave a few calls in flight for Stop.
			for j := range 3 {
				body := append([]byte(fmt.Sprintf("stop-w%d-%d;", w, j)), compressible(3000)...)
				c.send("echo", "Say", compress(t, codecs.Zstd(), body), compressed(1, len(body)))
			}
		})
	}
	wg.Wait()
	close(stopUpdates)
	updates.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, s.Stop(ctx))

	rc.mu.Lock()
	defer rc.mu.Unlock()
	for id, n := range rc.decoded {
		assert.LessOrEqual(t, n, 1, "%s decoded %d times", id, n)
	}
	answered.Range(func(k, _ any) bool {
		assert.Equal(t, 1, rc.decoded[k.(string)], "%s answered but decoded %d times", k, rc.decoded[k.(string)])
		return true
	})
	st := s.Stats()
	assert.Zero(t, st.ServerCalls.Active)
	assert.Zero(t, st.ServerCalls.Reserved)
	assert.Zero(t, st.Governor.Decodes.Used)
	assert.Zero(t, st.Governor.Retained.Used)
	assert.Zero(t, st.Governor.Decoded.Used)
	assert.Zero(t, st.Admission.DoubleReleases)
	assert.Zero(t, st.Admission.QueuedCalls)
	t.Logf("%d decodes, %d failed, %d bodies decoded to the end; refusals %v", st.Decompressions, st.DecodeFailures, len(rc.decoded), st.Refusals)
}
