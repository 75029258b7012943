package kernel_test

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/kernel"
)

// Retire and reclaim: 100,000 Enable/Update/Disable cycles under traffic
// leave the number of live programs and states bounded, and all of them
// reclaimed at the end.
func TestHundredThousandCyclesStayBounded(t *testing.T) {
	cycles := 100_000
	if testing.Short() {
		cycles = 5_000
	}
	const workers = 4
	f := newFixture(t)
	f.k.SetHooks(nil)
	withMethod := func(n int64) kernel.Options {
		return kernel.Options{Global: conc(n), Methods: map[string]kernel.Rule{echoSay: conc(2)}}
	}
	withService := func(n int64) kernel.Options {
		return kernel.Options{Global: conc(n), Services: map[string]kernel.Rule{"math": conc(3)}}
	}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var admitted atomic.Int64
	for w := range workers {
		wg.Go(func() {
			methods := []kernel.MethodID{f.say, f.shout, f.add}
			var p kernel.Permit
			for i := w; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if !f.k.Capture(&p) {
					continue
				}
				if p.Admit(context.Background(), kernel.Request{Method: methods[i%3]}) == nil {
					admitted.Add(1)
				}
				p.Release()
			}
		})
	}

	// Each worker holds at most one permit, so at most one retired program
	// per worker can be live, plus the current one. States are keyed by
	// scope: Global, service math and method echo/Say.
	const maxLive, maxStates = workers + 1, 3
	var peakLive int64
	var peakStates int
	var baseHeap uint64
	extra := 0 // cycles run after the last to wait for a first admission
	for i := range cycles {
		if i == 1000 {
			baseHeap = liveHeap()
		}
		g := f.enable(withMethod(int64(i%5 + 1)))
		_, err := f.k.Update(g, withService(int64(i%3+1)))
		require.NoError(t, err)
		_, err = f.k.Disable()
		require.NoError(t, err)
		if i%1000 == 0 {
			st := f.k.Stats()
			peakLive = max(peakLive, st.LivePrograms)
			peakStates = max(peakStates, st.States)
			require.LessOrEqual(t, st.LivePrograms, int64(maxLive), "cycle %d", i)
			require.LessOrEqual(t, st.States, maxStates, "cycle %d", i)
		}
	}
	// The run is not vacuous: wait until the workers were admitted at
	// least once, however late a busy machine scheduled them (cycles
	// keep going meanwhile, so the bounds above are still checked).
	for i := 0; admitted.Load() == 0; i++ {
		g := f.enable(withMethod(int64(i%5 + 1)))
		runtime.Gosched()
		_, err := f.k.Update(g, withService(int64(i%3+1)))
		require.NoError(t, err)
		_, err = f.k.Disable()
		require.NoError(t, err)
		extra++
	}
	close(stop)
	wg.Wait()
	require.Positive(t, admitted.Load())
	st := f.k.Stats()
	require.Zero(t, st.LivePrograms)
	require.Zero(t, st.States)
	require.Equal(t, uint64(3*(cycles+extra)), st.Generation)
	// History costs no memory: a leak of even 40 bytes per cycle would
	// show as megabytes here.
	growth := int64(liveHeap()) - int64(baseHeap)
	require.Less(t, growth, int64(2<<20), "heap grew by %d bytes over %d cycles", growth, cycles)
	t.Logf("cycles=%d admitted=%d peak live programs=%d peak states=%d heap growth=%d B", cycles, admitted.Load(), peakLive, peakStates, growth)
}

func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
