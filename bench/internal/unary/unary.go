// Package unary runs the unary echo comparison of sluice against grpc-go:
// both over TCP loopback in this process, the same payloads, the same
// number of concurrent callers, measured side by side.
//
// grpc-go runs with a codec that passes []byte through untouched (the
// fastest grpc-go can be: no protobuf), against sluice's raw handlers.
package unary

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicerpc/sluice/bench/internal/cputime"
)

// System is one RPC stack under test: Start serves the echo method on a
// loopback listener and returns a Caller for it and a stop function.
type System struct {
	Name  string
	Start func() (Caller, func(), error)
}

// Caller makes one echo call with body and returns the response.
type Caller func(ctx context.Context, body []byte) ([]byte, error)

// Result is one measured case.
type Result struct {
	System      string
	Payload     int
	Concurrency int
	Calls       int64
	Elapsed     time.Duration
	P50, P99    time.Duration
	// AllocsPerCall counts heap allocations of the whole process (client
	// and server together) per call; CPUPerCall is the process's user
	// plus system CPU time per call (client and server together too).
	AllocsPerCall float64
	CPUPerCall    time.Duration
	Errors        int64
}

// CallsPerSecond is the measured throughput.
func (r Result) CallsPerSecond() float64 { return float64(r.Calls) / r.Elapsed.Seconds() }

// Measure runs conc callers of caller with a payload of size bytes (a
// repeated alphabet) for warmup, then for d, and returns the measurements
// of d. Every call's response must be as long as its request.
func Measure(name string, caller Caller, size, conc int, warmup, d time.Duration) (Result, error) {
	body := make([]byte, size)
	for i := range body {
		body[i] = byte('a' + i%26)
	}
	return MeasureBody(name, caller, body, conc, warmup, d)
}

// MeasureBody is Measure with the request body given: every call sends
// body, which the callers share and must not modify. The first response
// must equal body byte for byte (checked before the warm-up); later ones
// must be as long. The warm-up starts when every caller has finished its
// first call; the measurement lasts d, or longer, up to 10 d, until 2
// calls per caller have completed in it.
func MeasureBody(name string, caller Caller, body []byte, conc int, warmup, d time.Duration) (Result, error) {
	size := len(body)
	if resp, err := caller(context.Background(), body); err != nil {
		return Result{}, fmt.Errorf("%s: first call: %w", name, err)
	} else if !bytes.Equal(resp, body) {
		return Result{}, fmt.Errorf("%s: the echo of %d bytes came back as %d different bytes", name, size, len(resp))
	}
	var (
		measuring atomic.Bool
		stop      atomic.Bool
		calls     atomic.Int64
		errs      atomic.Int64
		firstErr  atomic.Value
		wg        sync.WaitGroup
	)
	lat := make([][]time.Duration, conc)
	for i := range lat {
		lat[i] = make([]time.Duration, 0, 1<<16)
	}
	ctx := context.Background()
	var warm sync.WaitGroup // each caller's first call done
	warm.Add(conc)
	for w := range conc {
		wg.Go(func() {
			for first := true; !stop.Load(); first = false {
				start := time.Now()
				resp, err := caller(ctx, body)
				el := time.Since(start)
				if first {
					warm.Done()
				}
				if err != nil || len(resp) != len(body) {
					errs.Add(1)
					if err == nil {
						err = fmt.Errorf("response of %d bytes to a request of %d", len(resp), len(body))
					}
					firstErr.CompareAndSwap(nil, err)
					continue
				}
				if measuring.Load() {
					calls.Add(1)
					if len(lat[w]) < cap(lat[w]) {
						lat[w] = append(lat[w], el)
					}
				}
			}
		})
	}
	// The warm-up starts once every caller has finished a call, so that
	// callers that all started together and take longer than the window
	// are not all in flight across it.
	warm.Wait()
	time.Sleep(warmup)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	cpu0 := cputime.Self()
	measuring.Store(true)
	start := time.Now()
	time.Sleep(d)
	// Slow calls (a 1 MiB gzip echo): measure at least two calls per
	// caller, for at most ten times d.
	for calls.Load() < int64(2*conc) && time.Since(start) < 10*d {
		time.Sleep(d / 20)
	}
	measuring.Store(false)
	elapsed := time.Since(start)
	cpu := cputime.Self() - cpu0
	runtime.ReadMemStats(&after)
	stop.Store(true)
	wg.Wait()
	r := Result{System: name, Payload: size, Concurrency: conc, Calls: calls.Load(), Elapsed: elapsed, Errors: errs.Load()}
	if e := firstErr.Load(); e != nil {
		return r, fmt.Errorf("%s: %d calls failed, the first: %v", name, r.Errors, e)
	}
	if r.Calls == 0 {
		return r, fmt.Errorf("%s: no call completed in %v", name, d)
	}
	r.AllocsPerCall = float64(after.Mallocs-before.Mallocs) / float64(r.Calls)
	r.CPUPerCall = cpu / time.Duration(r.Calls)
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	slices.Sort(all)
	r.P50, r.P99 = all[len(all)/2], all[len(all)*99/100]
	return r, nil
}

// listen opens a loopback listener.
func listen() (net.Listener, error) { return net.Listen("tcp", "127.0.0.1:0") }
