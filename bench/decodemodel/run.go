package decodemodel

import (
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Cell is one throughput measurement: Conc closed-loop callers, each
// sending Body(Codec, Payload(Ratio, Size)) and waiting for its response,
// over ceil(Conc/32) connections to a server running Model.
type Cell struct {
	Model       Model
	Codec       string
	Size        int
	Ratio       Ratio
	Cancellable bool // requests are registered for Cancel (a context and a map entry each)
	Conc        int
	Capacity    int // calls in flight per server; 0 means 1<<20 (never full); use Refuse for full
	Refuse      bool
}

func (c Cell) String() string {
	return fmt.Sprintf("%s/%s/%s/%s/cancel=%v/c=%d", c.Model, c.Codec, sizeName(c.Size), c.Ratio, c.Cancellable, c.Conc)
}

// Result is what a Cell measured over its window. CPU and allocation are
// the whole process's (the in-process client included, identical for every
// model) divided by the calls completed in the window.
type Result struct {
	Calls        int
	CallsPerSec  float64
	CPUPerCall   time.Duration // getrusage user+sys
	P50, P99     time.Duration // request written to response read
	BytesPerCall float64       // runtime.MemStats.TotalAlloc
	Decodes      int64         // Decompress calls in the window
	DecodedBytes int64
	Status       [4]int // responses by status
}

func connsFor(conc int) int { return (conc + 31) / 32 }

// RunCell measures c with body as every request's body: it warms up for
// at least warm and until Conc/4 calls have completed, then measures for at
// least dur and until minCalls calls have completed in the window. It
// returns an error when a call fails or the server leaks a call.
func RunCell(c Cell, body []byte, warm, dur time.Duration, minCalls int) (Result, error) {
	capacity := c.Capacity
	if capacity == 0 {
		capacity = 1 << 20
	}
	if c.Refuse {
		capacity = 0
	}
	srv, err := startServer(serverConfig{model: c.Model, codecs: Codecs(), capacity: capacity})
	if err != nil {
		return Result{}, err
	}
	conns := make([]*clientConn, connsFor(c.Conc))
	for i := range conns {
		if conns[i], err = dial(srv.addr()); err != nil {
			srv.Stop()
			return Result{}, err
		}
	}
	var (
		stop      atomic.Bool
		measuring atomic.Bool
		wg        sync.WaitGroup
		lats      = make([][]time.Duration, c.Conc)
		status    = make([][4]int, c.Conc)
		errs      = make([]error, c.Conc)
		done      atomic.Int64 // calls completed, warm-up included
		failed    atomic.Int64
	)
	for i := range c.Conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cc, slot := conns[i%len(conns)], i/len(conns)
			lats[i] = make([]time.Duration, 0, 1024)
			for seq := uint32(1); !stop.Load(); seq++ {
				id := uint32(slot)<<seqBits | seq&(1<<seqBits-1)
				t := time.Now()
				if err := cc.send(id, c.Cancellable, body); err != nil {
					if !stop.Load() {
						errs[i] = err
						failed.Add(1)
					}
					return
				}
				st, err := cc.wait(slot)
				if err != nil {
					if !stop.Load() { // after the window the server stops under the callers
						errs[i] = err
						failed.Add(1)
					}
					return
				}
				done.Add(1)
				if measuring.Load() {
					lats[i] = append(lats[i], time.Since(t))
					status[i][st]++
				}
			}
		}()
	}
	// The sleeps below bound measurement windows; nothing waits on them
	// for correctness.
	for t0 := time.Now(); (time.Since(t0) < warm || done.Load() < int64(max(1, c.Conc/4))) && failed.Load() == 0; {
		time.Sleep(time.Millisecond)
	}
	cpu0, mem0 := cpuTime(), totalAlloc()
	dec0, decB0 := srv.decodes.Load(), srv.decodedBytes.Load()
	t0 := time.Now()
	measuring.Store(true)
	for n0 := done.Load(); (time.Since(t0) < dur || done.Load()-n0 < int64(minCalls)) && failed.Load() == 0; {
		time.Sleep(time.Millisecond)
	}
	measuring.Store(false)
	elapsed := time.Since(t0)
	cpu1, mem1 := cpuTime(), totalAlloc()
	dec1, decB1 := srv.decodes.Load(), srv.decodedBytes.Load()
	stop.Store(true)
	srv.Stop() // ends the calls in flight at once (their responses are not measured)
	for _, cc := range conns {
		cc.close()
	}
	wg.Wait()
	var r Result
	var all []time.Duration
	for i := range c.Conc {
		if errs[i] != nil {
			return r, fmt.Errorf("%v: caller %d: %w", c, i, errs[i])
		}
		all = append(all, lats[i]...)
		for s, n := range status[i] {
			r.Status[s] += n
		}
	}
	if n := srv.inflight.Load(); n != 0 {
		return r, fmt.Errorf("%v: %d calls still hold capacity after Stop", c, n)
	}
	r.Calls = len(all)
	if r.Calls == 0 {
		return r, fmt.Errorf("%v: no call completed in %v", c, dur)
	}
	slices.Sort(all)
	r.P50, r.P99 = quantile(all, 0.50), quantile(all, 0.99)
	r.CallsPerSec = float64(r.Calls) / elapsed.Seconds()
	r.CPUPerCall = (cpu1 - cpu0) / time.Duration(r.Calls)
	r.BytesPerCall = float64(mem1-mem0) / float64(r.Calls)
	r.Decodes, r.DecodedBytes = dec1-dec0, decB1-decB0
	return r, nil
}

func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(q*float64(len(sorted))))]
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func totalAlloc() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.TotalAlloc
}

func sizeName(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return fmt.Sprintf("%dB", n)
}
