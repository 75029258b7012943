package decodemodel

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkDecodeModel compares the models' throughput in one run: b.N
// calls of zstd bodies shared by Conc closed-loop callers (cancellable
// requests). ns/op is wall time per call across all callers (1/throughput);
// cpu-ns/op is getrusage user+sys per call (the in-process client
// included). Run it with -count and benchstat to compare models:
//
//	go test ./bench/decodemodel -run '^$' -bench DecodeModel -benchmem -count 5
func BenchmarkDecodeModel(b *testing.B) {
	for _, size := range []int{1 << 10, 64 << 10, 1 << 20} {
		for _, ratio := range []Ratio{High, Low} {
			body := Body("zstd", Payload(ratio, size))
			for _, conc := range []int{1, 16, 128} {
				for _, m := range Models {
					b.Run(fmt.Sprintf("%s/%s/c=%d/%s", sizeName(size), ratio, conc, m), func(b *testing.B) {
						benchCalls(b, Cell{Model: m, Codec: "zstd", Size: size, Ratio: ratio, Cancellable: true, Conc: conc}, body)
					})
				}
			}
		}
	}
}

func benchCalls(b *testing.B, c Cell, body []byte) {
	srv, err := startServer(serverConfig{model: c.Model, codecs: Codecs(), capacity: 1 << 20})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Stop()
	conns := make([]*clientConn, connsFor(c.Conc))
	for i := range conns {
		if conns[i], err = dial(srv.addr()); err != nil {
			b.Fatal(err)
		}
		defer conns[i].close()
	}
	b.SetBytes(int64(c.Size))
	b.ReportAllocs()
	var left atomic.Int64
	left.Store(int64(b.N))
	var wg sync.WaitGroup
	errs := make(chan error, c.Conc)
	b.ResetTimer()
	cpu0, t0 := cpuTime(), time.Now()
	for i := range c.Conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cc, slot := conns[i%len(conns)], i/len(conns)
			for seq := uint32(1); left.Add(-1) >= 0; seq++ {
				id := uint32(slot)<<seqBits | seq&(1<<seqBits-1)
				if err := cc.send(id, true, body); err != nil {
					errs <- err
					return
				}
				st, err := cc.wait(slot)
				if err == nil && st != statusOK {
					err = fmt.Errorf("status %d", st)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	elapsed := time.Since(t0)
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "calls/s")
	select {
	case err := <-errs:
		b.Fatal(err)
	default:
	}
}
