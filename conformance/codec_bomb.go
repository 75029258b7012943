package conformance

import (
	"context"
	"errors"
	"runtime"
	"runtime/metrics"
	"sync"
	"time"

	"github.com/sluicerpc/sluice/spi"
)

// BombRefused decodes a 1 GiB bomb under a 4 MiB limit and measures what
// the decoder allocated.
const (
	bombSize  = 1 << 30
	bombLimit = 4 << 20

	// bombGrowth and bombWindows make the allowance: the decoder may
	// allocate in total bombGrowth times the limit plus bombWindows.
	// The measure is cumulative (runtime.MemStats.TotalAlloc), so it
	// counts garbage too: a decoder that grows its output by append
	// (Go grows a large slice by 1.25x) allocates up to five times the
	// final length in all, only the last of which is live; the sixth
	// limit is the decoder's own buffering of output (a window, a block).
	// bombWindows covers decoder state: zstd's capped window (8 MiB),
	// brotli's ring buffer, Huffman tables. 32 MiB in all at a 4 MiB limit,
	// a thirty-second of the bomb: a decoder that decodes the whole body
	// before it checks the limit, or that trusts a size the body declares,
	// is far above it.
	bombGrowth  = 6
	bombWindows = 8 << 20
)

// bombAllowance is the most a decoder may allocate refusing a bomb at
// limit.
func bombAllowance(limit int) uint64 { return uint64(bombGrowth*limit + bombWindows) }

// checkBombRefused: a 1 GiB bomb decoded under a 4 MiB limit fails with
// ErrDecodedTooLarge, having allocated at most bombAllowance(4 MiB). The
// check's context is a watchdog that ends (as cancelled) once the process
// has allocated that much since the call began, so that a decoder that
// goes on past its limit is stopped at the bound, not after a gigabyte:
// the check then fails, saying so.
func checkBombRefused(t tb, h CodecHarness) {
	c := newCodec(t, h)
	body, err := h.Bomb(bombSize)
	if errors.Is(err, errors.ErrUnsupported) {
		t.Skipf("the harness builds no bomb: %v", err)
	}
	if err != nil {
		t.Fatalf("Bomb(%d): %v", bombSize, err)
	}
	t.Logf("the bomb: %d compressed bytes decoding to %d", len(body), bombSize)

	allowance := bombAllowance(bombLimit)
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	ctx := newAllocWatchdog(allowance)
	r := decompressRecovered(ctx, c, nil, body, bombLimit)
	runtime.ReadMemStats(&after)
	allocated := after.TotalAlloc - before.TotalAlloc

	switch {
	case r.panicked != nil:
		t.Fatalf("Decompress(the bomb, limit %d) panicked: %v", bombLimit, r.panicked)
	case ctx.tripped():
		t.Fatalf("Decompress(the bomb, limit %d) was still decoding when the process had allocated more than the allowance of %d bytes (%d limits and %d for decoder state), and was stopped by the suite (%d bytes allocated in all); it returned %d bytes, %v: it must stop as soon as its output passes the limit, holding memory in proportion to it",
			bombLimit, allowance, bombGrowth, bombWindows, allocated, len(r.out), r.err)
	case !errors.Is(r.err, spi.ErrDecodedTooLarge):
		t.Fatalf("Decompress(the bomb, limit %d) = %d bytes, %v; want an error wrapping spi.ErrDecodedTooLarge", bombLimit, len(r.out), r.err)
	case len(r.out) != 0:
		t.Errorf("Decompress(the bomb) returned %d bytes with its error, want dst[:len(dst)] (none)", len(r.out))
	}
	t.Logf("refusing the bomb allocated %d bytes (allowance %d)", allocated, allowance)
	if allocated > allowance {
		t.Errorf("refusing the bomb allocated %d bytes, more than the allowance of %d (%d limits of %d and %d for decoder state)", allocated, allowance, bombGrowth, bombLimit, bombWindows)
	}
}

// allocWatchdog is a context that ends, as cancelled, once the process has
// allocated more than allowance bytes since it was made. It reads the
// allocations (a cheap runtime/metrics read) whenever the codec checks it,
// through Err or Done.
type allocWatchdog struct {
	allowance uint64
	start     uint64
	sample    []metrics.Sample

	mu   sync.Mutex
	done chan struct{}
	trip bool
}

var _ context.Context = (*allocWatchdog)(nil)

const heapAllocsMetric = "/gc/heap/allocs:bytes"

func newAllocWatchdog(allowance uint64) *allocWatchdog {
	w := &allocWatchdog{allowance: allowance, done: make(chan struct{}), sample: []metrics.Sample{{Name: heapAllocsMetric}}}
	w.start = w.allocated()
	return w
}

// allocated reads the bytes the process has allocated so far. Called with
// w.mu held, or before w is shared.
func (w *allocWatchdog) allocated() uint64 {
	metrics.Read(w.sample)
	if w.sample[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return w.sample[0].Value.Uint64()
}

// poll trips the watchdog if the allowance is spent, and reports whether
// it has tripped.
func (w *allocWatchdog) poll() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.trip && w.allocated()-w.start > w.allowance {
		w.trip = true
		close(w.done)
	}
	return w.trip
}

func (w *allocWatchdog) tripped() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.trip
}

func (w *allocWatchdog) Deadline() (time.Time, bool) { return time.Time{}, false }
func (w *allocWatchdog) Value(any) any               { return nil }

func (w *allocWatchdog) Done() <-chan struct{} {
	w.poll()
	return w.done
}

func (w *allocWatchdog) Err() error {
	if w.poll() {
		return context.Canceled
	}
	return nil
}
