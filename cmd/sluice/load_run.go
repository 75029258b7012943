package main

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicerpc/sluice/client"
	"github.com/sluicerpc/sluice/protocol/status"
)

// loadRun is one run of "sluice load": the scheduler (open or closed
// loop), the calls' outcomes and the progress line. Calls record their
// outcome without a lock when they succeed (atomic counters and the
// histogram), under mu otherwise; memory does not grow with the number of
// calls (one row per status code and reason).
type loadRun struct {
	o       loadOptions
	c       *client.Client
	methods []loadMethod
	weights []int // cumulative weights of methods
	opts    []client.CallOption

	start    time.Time
	due      atomic.Int64 // calls due (open loop) or about to start (closed loop)
	started  atomic.Int64
	missed   atomic.Int64 // due, not started: -max-inflight calls were in flight
	late     atomic.Int64 // started more than lateAfter after their due time
	inflight atomic.Int64
	ok       atomic.Int64
	live     latencyHist // successes since the last progress line
	total    latencyHist // successes before it (all of them once the run ended)

	mu   sync.Mutex
	rows map[statusKey]*statusCount // the calls that did not succeed
}

// loadMethod is one method of the mix, with its request body.
type loadMethod struct {
	weightedMethod
	body  []byte
	calls atomic.Int64
}

// statusKey is a row of the status table: the status code and, for a
// refusal, its reason.
type statusKey struct{ code, reason string }

// statusCount is a row's count and the first error's message.
type statusCount struct {
	n     int64
	first string
}

// newLoadRun prepares a run: the method mix and the request bodies.
func newLoadRun(o loadOptions, c *client.Client) *loadRun {
	r := &loadRun{o: o, c: c, rows: map[statusKey]*statusCount{}}
	rng := rand.New(rand.NewPCG(o.Seed, 0x736c75696365)) // the payload's bytes
	payload := make([]byte, o.Size)
	if o.Payload == payloadCompressible {
		const text = "sluice load compressible payload "
		for i := range payload {
			payload[i] = text[i%len(text)]
		}
	} else {
		for i := range payload {
			payload[i] = byte(rng.Uint32())
		}
	}
	r.methods = make([]loadMethod, len(o.Methods.list))
	sum := 0
	for i, m := range o.Methods.list {
		r.methods[i].weightedMethod = m
		r.methods[i].body = payload
		if m.Name == echoService+"/"+echoSleep {
			r.methods[i].body = sleepBody(o.Sleep)
		}
		sum += m.Weight
		r.weights = append(r.weights, sum)
	}
	if len(o.Metadata.pairs) > 0 {
		r.opts = append(r.opts, client.WithMetadata(o.Metadata.pairs...))
	}
	return r
}

// pick is the method of call i: a weighted choice that depends only on
// the seed and i (not on which caller makes the call, nor when), so that
// a seeded run makes the same mix whatever the timing.
func (r *loadRun) pick(i uint64) *loadMethod {
	x := splitmix64(r.o.Seed ^ splitmix64(i))
	w := int(x % uint64(r.weights[len(r.weights)-1]))
	for j, c := range r.weights {
		if w < c {
			return &r.methods[j]
		}
	}
	panic("unreachable")
}

func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// runLoad runs the load described by o on c and returns its results. It
// stops starting calls at -n or -duration, or when ctx ends (the calls in
// flight then end Canceled), and returns once every call it started
// ended. Progress lines go to o.progressOutput every -progress.
func runLoad(ctx context.Context, o loadOptions, c *client.Client) loadResult {
	r := newLoadRun(o, c)
	r.start = time.Now()
	stopProgress := r.startProgress()
	if o.Rate > 0 {
		r.openLoop(ctx)
	} else {
		r.closedLoop(ctx)
	}
	elapsed := time.Since(r.start)
	stopProgress()
	r.live.drainInto(&r.total)
	return r.result(elapsed)
}

// lateAfter is how far behind its due time a call of the open loop may
// start before it counts as late: one interval of the rate, at least 1ms.
func (r *loadRun) lateAfter() time.Duration {
	return max(time.Duration(float64(time.Second)/r.o.Rate), time.Millisecond)
}

// openLoop starts call i at start + i/rate whether or not earlier calls
// ended; a call due while -max-inflight calls are in flight is not
// started (missed), so that a slow server cannot make the load wait (the
// coordinated omission of a closed loop).
func (r *loadRun) openLoop(ctx context.Context) {
	sem := make(chan struct{}, r.o.MaxInflight)
	var wg sync.WaitGroup
	defer wg.Wait()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	end := r.start.Add(r.o.Duration)
	late := r.lateAfter()
	for i := 0; r.o.N == 0 || i < r.o.N; i++ {
		due := r.start.Add(time.Duration(float64(i) * float64(time.Second) / r.o.Rate))
		if r.o.Duration > 0 && !due.Before(end) {
			return
		}
		if d := time.Until(due); d > 0 {
			timer.Reset(d)
			select {
			case <-timer.C:
			case <-ctx.Done():
				return
			}
		} else if ctx.Err() != nil {
			return
		}
		r.due.Add(1)
		select {
		case sem <- struct{}{}:
		default:
			r.missed.Add(1)
			continue
		}
		if time.Since(due) > late {
			r.late.Add(1)
		}
		wg.Go(func() {
			defer func() { <-sem }()
			r.call(ctx, uint64(i))
		})
	}
}

// closedLoop runs -c callers, each starting its next call when its last
// one ended, until -n calls were started or -duration passed.
func (r *loadRun) closedLoop(ctx context.Context) {
	var wg sync.WaitGroup
	end := r.start.Add(r.o.Duration)
	for range r.o.Concurrency {
		wg.Go(func() {
			for ctx.Err() == nil {
				if r.o.Duration > 0 && !time.Now().Before(end) {
					return
				}
				i := r.due.Add(1) - 1
				if r.o.N > 0 && i >= int64(r.o.N) {
					r.due.Add(-1)
					return
				}
				r.call(ctx, uint64(i))
			}
		})
	}
	wg.Wait()
}

// call makes call i and records how it ended.
func (r *loadRun) call(ctx context.Context, i uint64) {
	m := r.pick(i)
	m.calls.Add(1)
	r.started.Add(1)
	r.inflight.Add(1)
	cctx, cancel := context.WithTimeout(ctx, r.o.Timeout)
	t0 := time.Now()
	_, err := r.c.CallRaw(cctx, m.Name, m.body, r.opts...)
	d := time.Since(t0)
	cancel()
	r.inflight.Add(-1)
	if err == nil {
		r.live.record(d)
		r.ok.Add(1)
		return
	}
	k := statusKeyOf(err)
	r.mu.Lock()
	row := r.rows[k]
	if row == nil {
		row = &statusCount{first: err.Error()}
		r.rows[k] = row
	}
	row.n++
	r.mu.Unlock()
}

// statusKeyOf is the row of a call that failed with err: its status code
// and the refusal reason the client sees (the server's admission, call
// capacity or drain, or the client's endpoint policy), if any.
func statusKeyOf(err error) statusKey {
	k := statusKey{code: status.Code(err).String()}
	if e, ok := status.FromError(err); ok {
		k.reason = e.Reason
	}
	return k
}

// refusalsByReason sums the rows with a reason, by reason.
func (r *loadRun) refusalsByReason() map[string]int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]int64{}
	for k, row := range r.rows {
		if k.reason != "" {
			out[k.reason] += row.n
		}
	}
	return out
}

// failures is the number of calls that ended with an error and no reason.
func (r *loadRun) failures() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	var n int64
	for k, row := range r.rows {
		if k.reason == "" {
			n += row.n
		}
	}
	return n
}
