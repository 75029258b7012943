package decodemodel

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// ProbeCell is one Cancel-wait measurement: a prober on one connection
// sends a cancellable request, waits until the server starts decoding it,
// then writes a Cancel frame for it, while Load-1 other callers keep
// sending the same body on the same connection.
type ProbeCell struct {
	Model Model
	Codec string
	Size  int
	Ratio Ratio
	Load  int // callers on the connection, the prober included
}

func (p ProbeCell) String() string {
	return fmt.Sprintf("%s/%s/%s/%s/load=%d", p.Model, p.Codec, sizeName(p.Size), p.Ratio, p.Load)
}

// ProbeResult: Stall is from the Cancel frame written to the server having
// read it (the reader, or ModelQuanta's poll); Wait is from the Cancel
// written to the end of the cancelled call's decode (0 when the decode had
// already ended). Completed counts the probes whose decode ran to the end
// despite the Cancel (the response said OK).
type ProbeResult struct {
	Samples            int
	StallP50, StallP99 time.Duration
	WaitP50, WaitP99   time.Duration
	Completed          int
	DecodeP50          time.Duration // probe decodes that completed: start to end
}

// RunProbe runs samples probes of p.
func RunProbe(p ProbeCell, body []byte, samples int) (ProbeResult, error) {
	base := time.Now()
	var probeID atomic.Uint32
	started := make(chan int64, 1)
	seen := make(chan int64, 1)
	ended := make(chan int64, 1)
	mark := func(ch chan int64, id uint32) {
		if id == probeID.Load() {
			select {
			case ch <- int64(time.Since(base)):
			default: // ModelQuanta may see a Cancel twice: keep the first
			}
		}
	}
	h := &hooks{
		decodeStart: func(id uint32) { mark(started, id) },
		decodeEnd:   func(id uint32, err error) { mark(ended, id) },
		cancelRead:  func(id uint32) { mark(seen, id) },
	}
	srv, err := startServer(serverConfig{model: p.Model, codecs: Codecs(), capacity: 1 << 20, hooks: h})
	if err != nil {
		return ProbeResult{}, err
	}
	defer srv.Stop()
	cc, err := dial(srv.addr())
	if err != nil {
		return ProbeResult{}, err
	}
	defer cc.close()
	var stop atomic.Bool
	var wg sync.WaitGroup
	defer func() { stop.Store(true); wg.Wait() }()
	for slot := 1; slot < p.Load; slot++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for seq := uint32(1); !stop.Load(); seq++ {
				if cc.send(uint32(slot)<<seqBits|seq&(1<<seqBits-1), true, body) != nil {
					return
				}
				if _, err := cc.wait(slot); err != nil {
					return
				}
			}
		}()
	}
	var r ProbeResult
	stalls := make([]time.Duration, 0, samples)
	waits := make([]time.Duration, 0, samples)
	var decodes []time.Duration
	timeout := time.NewTimer(time.Hour)
	defer timeout.Stop()
	recv := func(ch chan int64, what string) (int64, error) {
		timeout.Reset(30 * time.Second)
		select {
		case t := <-ch:
			return t, nil
		case <-timeout.C:
			return 0, fmt.Errorf("%v: no %s in 30s", p, what)
		}
	}
	for seq := uint32(1); len(stalls) < samples; seq++ {
		id := seq // slot 0
		probeID.Store(id)
		if err := cc.send(id, true, body); err != nil {
			return r, err
		}
		tStart, err := recv(started, "decode start")
		if err != nil {
			return r, err
		}
		t0 := int64(time.Since(base))
		if err := cc.sendCancel(id); err != nil {
			return r, err
		}
		st, err := cc.wait(0)
		if err != nil {
			return r, err
		}
		tSeen, err := recv(seen, "Cancel read")
		if err != nil {
			return r, err
		}
		tEnd, err := recv(ended, "decode end")
		if err != nil {
			return r, err
		}
		probeID.Store(0)
		stalls = append(stalls, time.Duration(tSeen-t0))
		waits = append(waits, time.Duration(max(0, tEnd-t0)))
		if st == statusOK {
			r.Completed++
			decodes = append(decodes, time.Duration(tEnd-tStart))
		}
	}
	slices.Sort(stalls)
	slices.Sort(waits)
	slices.Sort(decodes)
	r.Samples = len(stalls)
	r.StallP50, r.StallP99 = quantile(stalls, 0.5), quantile(stalls, 0.99)
	r.WaitP50, r.WaitP99 = quantile(waits, 0.5), quantile(waits, 0.99)
	r.DecodeP50 = quantile(decodes, 0.5)
	return r, nil
}

// RunStop measures Stop with conc callers sending body to a server running
// model, after warm.
func RunStop(model Model, body []byte, conc int, warm time.Duration) (stopTimes, error) {
	srv, err := startServer(serverConfig{model: model, codecs: Codecs(), capacity: 1 << 20})
	if err != nil {
		return stopTimes{}, err
	}
	conns := make([]*clientConn, connsFor(conc))
	for i := range conns {
		if conns[i], err = dial(srv.addr()); err != nil {
			srv.Stop()
			return stopTimes{}, err
		}
	}
	var wg sync.WaitGroup
	for i := range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cc, slot := conns[i%len(conns)], i/len(conns)
			for seq := uint32(1); ; seq++ {
				if cc.send(uint32(slot)<<seqBits|seq&(1<<seqBits-1), true, body) != nil {
					return
				}
				if _, err := cc.wait(slot); err != nil {
					return
				}
			}
		}()
	}
	time.Sleep(warm)
	st := srv.Stop()
	for _, cc := range conns {
		cc.close()
	}
	wg.Wait()
	if n := srv.inflight.Load(); n != 0 {
		return st, fmt.Errorf("stop %v: %d calls still hold capacity", model, n)
	}
	return st, nil
}
