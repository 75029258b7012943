package codecs

import (
	"bytes"
	"context"
	"math/bits"
	"sync"

	"github.com/andybalholm/brotli"
	"github.com/sluicerpc/sluice/spi"
)

// Brotli returns the Brotli codec (wire profile "br", RFC 7932, from
// github.com/andybalholm/brotli at quality 5): a body is exactly one
// Brotli stream, and any byte after its last meta-block is corrupt input.
// The large-window extension is not accepted, so a decoder's ring buffer is
// at most 16 MiB (the stream's declared window, shrunk for a stream whose
// only meta-block is short); Compress chooses the smallest window that
// covers the message, so sluice's own bodies need a ring buffer no larger
// than themselves. Writers are pooled per window size; readers are pooled
// and Reset, and keep their ring buffer (the largest they have needed, at
// most 16 MiB) while pooled.
func Brotli() spi.Codec { return brotliCodec{} }

type brotliCodec struct{}

const (
	brotliQuality  = 5
	brotliMinLGWin = 10
	brotliMaxLGWin = 24
)

type brotliWriter struct {
	w   *brotli.Writer
	out boundedWriter
}

var brotliWriters [brotliMaxLGWin + 1]sync.Pool

func init() {
	for lg := brotliMinLGWin; lg <= brotliMaxLGWin; lg++ {
		brotliWriters[lg].New = func() any {
			bw := &brotliWriter{}
			bw.w = brotli.NewWriterOptions(&bw.out, brotli.WriterOptions{Quality: brotliQuality, LGWin: lg})
			return bw
		}
	}
}

// brotliLGWin is the smallest window (log2) that covers n bytes.
func brotliLGWin(n int) int {
	return min(max(bits.Len(uint(n)), brotliMinLGWin), brotliMaxLGWin)
}

type brotliReader struct {
	r   *brotli.Reader
	src bytes.Reader
	out spill
}

var brotliReaders = sync.Pool{New: func() any {
	br := &brotliReader{}
	br.r = brotli.NewReader(&br.src)
	return br
}}

func (brotliCodec) Name() string { return "br" }

func (brotliCodec) Compress(dst, src []byte) ([]byte, bool, error) {
	pool := &brotliWriters[brotliLGWin(len(src))]
	bw := pool.Get().(*brotliWriter)
	bw.out.buf = dst
	bw.w.Reset(&bw.out)
	_, err := bw.w.Write(src)
	if err == nil {
		err = bw.w.Close()
	}
	out := bw.out.buf
	bw.out.buf = nil
	pool.Put(bw) // Reset clears a failed writer's error and state
	if err == nil {
		return out, true, nil
	}
	if err == errNoFit {
		return dst, false, nil
	}
	return dst, false, err
}

func (brotliCodec) Decompress(ctx context.Context, dst, src []byte, limit int) ([]byte, error) {
	limit = max(limit, 0) // the contract says at least 0; a negative limit allows nothing
	if err := ctx.Err(); err != nil {
		return dst, err
	}
	br := brotliReaders.Get().(*brotliReader)
	defer func() {
		br.src.Reset(nil)
		brotliReaders.Put(br)
	}()
	br.src.Reset(src)
	_ = br.r.Reset(&br.src) // never fails
	out, err := readBounded(ctx, "br", br.r, dst, limit, 0, &br.out)
	if err != nil {
		return out, err
	}
	if br.src.Len() != 0 {
		return dst, spi.CorruptError("br", "trailing bytes after the stream", nil)
	}
	return out, nil
}
