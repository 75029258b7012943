package codecs_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/sluicerpc/sluice/codecs"
	"github.com/sluicerpc/sluice/spi"
)

// streamed returns n bytes of text zstd-encoded by a streaming writer with
// an 8 MiB window that does not declare the content size.
func streamed(t *testing.T, n int) ([]byte, []byte) {
	t.Helper()
	src := shapes[2].fill(n)
	var buf bytes.Buffer
	w, err := zstd.NewWriter(&buf, zstd.WithWindowSize(8<<20), zstd.WithEncoderConcurrency(1))
	if err != nil {
		t.Fatal(err)
	}
	for p := src; len(p) > 0; p = p[min(len(p), 100<<10):] {
		if _, err := w.Write(p[:min(len(p), 100<<10)]); err != nil {
			t.Fatal(err)
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	var h zstd.Header
	if err := h.Decode(buf.Bytes()); err != nil || h.SingleSegment || h.WindowSize != 8<<20 {
		t.Fatalf("want a frame with an 8 MiB window: %+v, %v", h, err)
	}
	return src, buf.Bytes()
}

// TestZstdWindowIsBoundedByTheLimit: a frame whose window is above twice
// the limit is refused before decoding (the decoder would allocate it);
// within twice the limit it decodes, whatever limit the pooled decoder had
// before.
func TestZstdWindowIsBoundedByTheLimit(t *testing.T) {
	src, body := streamed(t, 300<<10)
	c := codecs.Zstd()
	ctx := newCountingCtx(1 << 40)
	if _, err := c.Decompress(ctx, nil, body, 4<<20-1); !errors.Is(err, spi.ErrDecodedTooLarge) {
		t.Fatalf("8 MiB window at a limit under 4 MiB: %v, want ErrDecodedTooLarge", err)
	}
	for _, limit := range []int{4 << 20, 1 << 30, 4 << 20, len(src)} {
		if limit < 4<<20 {
			if _, err := c.Decompress(ctx, nil, body, limit); !errors.Is(err, spi.ErrDecodedTooLarge) {
				t.Fatalf("limit %d: %v, want ErrDecodedTooLarge (window)", limit, err)
			}
			continue
		}
		got, err := c.Decompress(context.Background(), nil, body, limit)
		if err != nil || !bytes.Equal(got, src) {
			t.Fatalf("limit %d: %d bytes, %v", limit, len(got), err)
		}
	}
}

// TestZstdRefusesMoreThanOneFrame: two concatenated frames (valid zstd for
// a stream reader) are one body too many.
func TestZstdRefusesMoreThanOneFrame(t *testing.T) {
	c := codecs.Zstd()
	one := compress(t, c, []byte("hello"))
	two := append(append([]byte(nil), one...), one...)
	if _, err := c.Decompress(context.Background(), nil, two, 1<<20); !errors.Is(err, spi.ErrCorrupt) {
		t.Fatalf("two frames: %v, want ErrCorrupt", err)
	}
	skippable := append([]byte{0x50, 0x2a, 0x4d, 0x18, 0, 0, 0, 0}, one...)
	if _, err := c.Decompress(context.Background(), nil, skippable, 1<<20); !errors.Is(err, spi.ErrCorrupt) {
		t.Fatalf("a skippable frame first: %v, want ErrCorrupt", err)
	}
}
