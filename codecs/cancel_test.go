package codecs_test

import (
	"context"
	"errors"
	"sync"
	"testing"
)

// TestCancelledContextStopsBeforeDecoding: a context that has ended is
// reported before any work.
func TestCancelledContextStopsBeforeDecoding(t *testing.T) {
	for _, c := range all() {
		_, body := body(t, c, 2, 1<<20)
		ctx := newCountingCtx(0)
		out, err := c.Decompress(ctx, []byte("x"), body, 1<<30)
		if !errors.Is(err, context.Canceled) || string(out) != "x" {
			t.Errorf("%s: Decompress with an ended context = %q, %v; want context.Canceled, dst unchanged", c.Name(), out, err)
		}
	}
}

// TestCancellationIsObservedWithinOneQuantum: the context ends right after
// the check before decoding starts; a 4 MiB body (16 quanta) must then fail
// with the context's error, having checked the context only once more (it
// stopped at the first quantum boundary).
//
// The same with the context ending after its fourth check: the decoder
// went on through three quanta and stopped at the fourth.
func TestCancellationIsObservedWithinOneQuantum(t *testing.T) {
	for _, c := range all() {
		_, body := body(t, c, 2, 4<<20)
		for _, after := range []int64{1, 4} {
			ctx := newCountingCtx(after)
			out, err := c.Decompress(ctx, []byte("x"), body, 1<<30)
			if !errors.Is(err, context.Canceled) || string(out) != "x" {
				t.Errorf("%s: Decompress cancelled after check %d = %d bytes, %v; want context.Canceled, dst unchanged", c.Name(), after, len(out), err)
			}
			if got := ctx.calls.Load(); got != after+1 {
				t.Errorf("%s: checked the context %d times, want %d (before, then once per quantum)", c.Name(), got, after+1)
			}
		}
	}
}

// TestContextIsCheckedEveryQuantum: an uncancelled 4 MiB decode checks its
// context at least once per quantum of output.
func TestContextIsCheckedEveryQuantum(t *testing.T) {
	for _, c := range all() {
		_, body := body(t, c, 2, 4<<20)
		ctx := newCountingCtx(1 << 40)
		if _, err := c.Decompress(ctx, nil, body, 4<<20); err != nil {
			t.Fatal(err)
		}
		if got := ctx.calls.Load(); got < 16 {
			t.Errorf("%s: checked the context %d times decoding 16 quanta", c.Name(), got)
		}
	}
}

func TestConcurrentUse(t *testing.T) {
	for _, c := range all() {
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Go(func() {
				for i := range 10 {
					src := shapes[(g+i)%3].fill(sizes[(g+i)%5]) // up to 64 KiB
					enc := compress(t, c, src)
					got, err := c.Decompress(context.Background(), nil, enc, len(src))
					if err != nil || string(got) != string(src) {
						t.Errorf("%s: concurrent round trip of %d bytes: %d bytes, %v", c.Name(), len(src), len(got), err)
						return
					}
				}
			})
		}
		wg.Wait()
	}
}
