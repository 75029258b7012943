package conformance

import (
	"bytes"
	"context"
	"errors"
	"runtime"
	"sync"
	"time"

	"github.com/sluicerpc/sluice/spi"
)

// Cancellation decodes a large body of zeros under a context that the
// check ends after the codec has checked it a few times.
const (
	cancelBodySize = 32 << 20
	cancelLimit    = 64 << 20
	// cancelAfter is the check of the context after which it is
	// cancelled: the codec has decoded a few quanta at most by then.
	cancelAfter = 4
	// cancelSlack is how much output beyond one DecodeQuantum the codec
	// may produce between the cancellation and its return: output a
	// decoder holds internally when the context is checked (a deflate
	// window, a zstd block of up to 128 KiB) is copied out after it.
	cancelSlack = spi.DecodeQuantum / 2
	// cancelAllocSlack bounds what a codec may allocate between the
	// cancellation and its return: a codec that decodes into a buffer of
	// its own (not dst's spare capacity) shows as allocations what the
	// output scan cannot see.
	cancelAllocSlack = 8 << 20
	// sentinel fills dst's spare capacity: the body decodes to zeros, so
	// the output a codec has written into dst so far is the run of zeros
	// before the first sentinel.
	sentinel = 0xA5
)

// checkCancellation: a context already ended fails the call with its error
// before any output; a context cancelled while a large body decodes stops
// the decoding within about one DecodeQuantum with its error.
func checkCancellation(t tb, h CodecHarness) {
	c := newCodec(t, h)

	// Already cancelled: ctx's error, nothing decoded, not even into
	// dst's spare capacity.
	src := repetitiveText(seeded(14), 256<<10)
	if body, ok := compressBody(t, c, src, "256 KiB of text"); ok {
		dst := sentinelDst(len(src))
		ctx := &countingCtx{cancelAt: 0}
		r := decompressRecovered(ctx, c, dst, body, len(src))
		switch {
		case r.panicked != nil:
			t.Errorf("Decompress under a cancelled context panicked: %v", r.panicked)
		case !errors.Is(r.err, context.Canceled):
			t.Errorf("Decompress under a context cancelled before the call = %d bytes, %v; want context.Canceled", len(r.out)-len(dstPrefix), r.err)
		case ctx.calls() == 0:
			t.Errorf("Decompress under a cancelled context returned context.Canceled without checking it (no Err or Done call)")
		default:
			if bad := keptDst(r.out, dstPrefix); bad != "" {
				t.Errorf("Decompress under a cancelled context %s", bad)
			}
			if n := written(dst); n != 0 {
				t.Errorf("Decompress under a context cancelled before the call wrote %d bytes of output before it checked it", n)
			}
		}
	}

	// Cancelled while decoding.
	body, what, ok := largeBody(t, h, c)
	if !ok {
		return
	}
	dst := sentinelDst(cancelBodySize + spi.DecodeQuantum)
	ctx := &countingCtx{cancelAt: cancelAfter, probe: func() int { return written(dst) }}
	r := decompressRecovered(ctx, c, dst, body, cancelLimit)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	calls, atCancel, allocAtCancel := ctx.calls(), ctx.atCancel(), ctx.allocAtCancel()
	after := written(dst)
	switch {
	case r.panicked != nil:
		t.Fatalf("Decompress(%s) panicked: %v", what, r.panicked)
	case !ctx.cancelled():
		t.Fatalf("Decompress(%s) = %d bytes, %v after checking its context %d times: the contract asks for a check per DecodeQuantum (%d bytes), at least %d here",
			what, len(r.out)-len(dstPrefix), r.err, calls, spi.DecodeQuantum, cancelBodySize/spi.DecodeQuantum)
	case !errors.Is(r.err, context.Canceled):
		t.Fatalf("Decompress(%s) under a context cancelled after its %dth check = %d bytes, %v; want context.Canceled", what, cancelAfter, len(r.out)-len(dstPrefix), r.err)
	}
	if bad := keptDst(r.out, dstPrefix); bad != "" {
		t.Errorf("Decompress(%s), cancelled, %s", what, bad)
	}
	t.Logf("cancelled at %d bytes of output written into dst, returned at %d, after %d checks of the context", atCancel, after, calls)
	if beyond := after - atCancel; beyond > spi.DecodeQuantum+cancelSlack {
		t.Errorf("Decompress(%s) wrote %d bytes of output after its context was cancelled, more than one DecodeQuantum (%d) and %d of slack", what, beyond, spi.DecodeQuantum, cancelSlack)
	}
	if grew := ms.TotalAlloc - allocAtCancel; grew > cancelAllocSlack {
		t.Errorf("Decompress(%s) allocated %d bytes after its context was cancelled (at most %d): it went on decoding", what, grew, cancelAllocSlack)
	}
}

// largeBody returns a body decoding to cancelBodySize zeros: the
// harness's bomb, or, for a codec without one, Compress's.
func largeBody(t tb, h CodecHarness, c spi.Codec) ([]byte, string, bool) {
	t.Helper()
	body, err := h.Bomb(cancelBodySize)
	switch {
	case errors.Is(err, errors.ErrUnsupported):
		body, ok := compressBody(t, c, make([]byte, cancelBodySize), "32 MiB of zeros")
		return body, "32 MiB of zeros, compressed", ok
	case err != nil:
		t.Errorf("Bomb(%d): %v", cancelBodySize, err)
		return nil, "", false
	}
	return body, "a bomb of 32 MiB", true
}

// sentinelDst returns a dst holding dstPrefix with spare capacity spare,
// filled with sentinel.
func sentinelDst(spare int) []byte {
	dst := make([]byte, len(dstPrefix)+spare)
	copy(dst, dstPrefix)
	fill := dst[len(dstPrefix):]
	if len(fill) > 0 {
		fill[0] = sentinel
		for n := 1; n < len(fill); n *= 2 {
			copy(fill[n:], fill[:n])
		}
	}
	return dst[:len(dstPrefix)]
}

// written is how many bytes of zeros a codec has written into the spare
// capacity of a sentinelDst.
func written(dst []byte) int {
	spare := dst[len(dst):cap(dst)]
	if i := bytes.IndexByte(spare, sentinel); i >= 0 {
		return i
	}
	return len(spare)
}

// countingCtx is a context that the codec's own checks cancel: the first
// cancelAt calls of Err or Done see it live, and it is cancelled as the
// cancelAt-th returns (cancelAt 0: cancelled from the start). No timer
// is involved: where a codec stops depends only on where it checks. When
// it is cancelled it records, through probe, how much output the codec
// has written, and the process's allocations.
type countingCtx struct {
	cancelAt int
	probe    func() int

	mu     sync.Mutex
	n      int
	done   chan struct{}
	at     int
	alloc  uint64
	cancel bool
}

var _ context.Context = (*countingCtx)(nil)

// check counts one check and reports whether the context was cancelled
// before it.
func (c *countingCtx) check() (done chan struct{}, cancelled bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		c.done = make(chan struct{})
		if c.cancelAt == 0 {
			c.cancelLocked()
		}
	}
	c.n++
	was := c.cancel
	if !c.cancel && c.n >= c.cancelAt {
		c.cancelLocked()
	}
	return c.done, was
}

func (c *countingCtx) cancelLocked() {
	c.cancel = true
	close(c.done)
	if c.probe != nil {
		c.at = c.probe()
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	c.alloc = ms.TotalAlloc
}

func (c *countingCtx) Deadline() (time.Time, bool) { return time.Time{}, false }
func (c *countingCtx) Value(any) any               { return nil }

func (c *countingCtx) Done() <-chan struct{} {
	done, _ := c.check()
	return done
}

func (c *countingCtx) Err() error {
	if _, cancelled := c.check(); cancelled {
		return context.Canceled
	}
	return nil
}

func (c *countingCtx) calls() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

func (c *countingCtx) cancelled() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cancel
}

func (c *countingCtx) atCancel() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.at
}

func (c *countingCtx) allocAtCancel() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.alloc
}
