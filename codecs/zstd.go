package codecs

import (
	"bytes"
	"context"
	"fmt"
	"math/bits"
	"sync"

	"github.com/klauspost/compress/zstd"
	"github.com/sluicerpc/sluice/spi"
)

// Zstd returns the Zstandard codec (wire profile "zstd", RFC 8878, from
// github.com/klauspost/compress/zstd at its default level): a body is
// exactly one zstd frame (no skippable frames, no dictionary), and any byte
// after it is corrupt input. The frame's header is checked before decoding:
// a declared content size above the limit, or a window above twice the
// limit (windows are declared in coarse steps, often the next power of
// two), is refused at once (ErrDecodedTooLarge). Frames are decoded by
// pooled synchronous decoders (WithDecoderConcurrency(1), with
// WithDecoderMaxWindow and WithDecoderMaxMemory set from the limit) read in
// quanta into the output, so a decoder holds at most the frame's window
// plus two blocks besides the output.
func Zstd() spi.Codec { return zstdCodec{} }

type zstdCodec struct{}

// zstdCap is the window and memory cap a decoder gets for a call's limit:
// twice the limit (the window check zstdFrame makes first) rounded up to a
// power of two, so that calls with similar limits reuse a decoder's setting.
func zstdCap(limit int) uint64 {
	c := max(2*uint64(limit), zstd.MinWindowSize)
	return min(uint64(1)<<bits.Len64(c-1), 1<<40)
}

// zstdEncoder compresses every zstd body: EncodeAll is safe for
// concurrent use, and the default concurrency gives it GOMAXPROCS encoders
// (with fewer, concurrent calls would queue). It is made once, at package
// initialization: an Encoder hands its encoders around on a channel, and a
// channel made inside a testing/synctest bubble must not be used outside
// it, so encoders made on demand (say, pooled) would crash a program whose
// tests compress both inside and outside bubbles
// [TestCodecsWorkInsideAndOutsideSynctestBubbles].
//
// Each encoder keeps its history buffers for the process's life, so they
// are kept small: a 1 MiB window and WithLowerEncoderMem hold about 2.5 MB
// per encoder after large bodies (1.3 MB after small ones), where the
// library's defaults (an 8 MiB window) held 18 MiB each: 36 MB on 2 cores,
// above a gigabyte on 64 [TestZstdEncodersHoldLittle]. A body of up to
// 1 MiB compresses exactly as with the default window.
var zstdEncoder = func() *zstd.Encoder {
	e, err := zstd.NewWriter(nil, zstd.WithZeroFrames(true), zstd.WithWindowSize(1<<20), zstd.WithLowerEncoderMem(true))
	if err != nil {
		panic("codecs: zstd encoder: " + err.Error())
	}
	e.EncodeAll([]byte{0}, nil) // initializes it here, outside any bubble
	return e
}()

type zstdReader struct {
	d   *zstd.Decoder
	cap uint64 // the decoder's current window and memory cap
	src bytes.Reader
	out spill
}

// zstdReaders are the pooled decoders. A goroutine in a testing/synctest
// bubble makes its own and drops it (see inSynctestBubble).
var zstdReaders = sync.Pool{New: func() any { return newZstdReader() }}

func newZstdReader() *zstdReader {
	const initial = 1 << 20
	d, err := zstd.NewReader(nil,
		zstd.WithDecoderConcurrency(1), // synchronous: decodes only as it is read
		zstd.WithDecoderLowmem(true),
		zstd.WithDecoderMaxWindow(initial),
		zstd.WithDecoderMaxMemory(initial),
		zstd.WithDecodeBuffersBelow(0), // never decode a whole buffer at once
	)
	if err != nil {
		panic("codecs: zstd decoder: " + err.Error())
	}
	return &zstdReader{d: d, cap: initial}
}

// scratch buffers for compressed forms that may not fit dst.
var scratch = sync.Pool{New: func() any { return new([]byte) }}

func (zstdCodec) Name() string { return "zstd" }

func (zstdCodec) Compress(dst, src []byte) ([]byte, bool, error) {
	e := zstdEncoder
	spare := cap(dst) - len(dst)
	if e.MaxEncodedSize(len(src)) <= spare {
		return e.EncodeAll(src, dst), true, nil
	}
	return viaScratch(dst, src, e.MaxEncodedSize(len(src)), e.EncodeAll)
}

// viaScratch encodes src with encode into a pooled buffer of at least most
// bytes and copies the result into dst when it fits.
func viaScratch(dst, src []byte, most int, encode func(src, dst []byte) []byte) ([]byte, bool, error) {
	bp := scratch.Get().(*[]byte)
	defer scratch.Put(bp)
	if cap(*bp) < most {
		*bp = make([]byte, 0, most)
	}
	enc := encode(src, (*bp)[:0])
	if len(enc) > cap(dst)-len(dst) {
		return dst, false, nil
	}
	return append(dst, enc...), true, nil
}

func (zstdCodec) Decompress(ctx context.Context, dst, src []byte, limit int) ([]byte, error) {
	limit = max(limit, 0) // the contract says at least 0; a negative limit allows nothing
	if err := ctx.Err(); err != nil {
		return dst, err
	}
	size, hint, err := zstdFrame(src, limit)
	if err != nil {
		return dst, err
	}
	if size != len(src) {
		return dst, spi.CorruptError("zstd", fmt.Sprintf("%d trailing bytes after the frame", len(src)-size), nil)
	}
	var zr *zstdReader
	if inSynctestBubble() {
		zr = newZstdReader()
		defer zr.d.Close()
	} else {
		zr = zstdReaders.Get().(*zstdReader)
		defer func() {
			zr.src.Reset(nil)
			_ = zr.d.Reset(nil)
			zstdReaders.Put(zr)
		}()
	}
	zr.src.Reset(src)
	if c := zstdCap(limit); c != zr.cap {
		err = zr.d.ResetWithOptions(&zr.src, zstd.WithDecoderMaxWindow(c), zstd.WithDecoderMaxMemory(c))
		zr.cap = c
	} else {
		err = zr.d.Reset(&zr.src)
	}
	if err != nil {
		return dst, spi.CorruptError("zstd", "starting the frame", err)
	}
	return readBounded(ctx, "zstd", zr.d, dst, limit, trustedHint(hint, len(src)), &zr.out)
}

// zstdFrame checks that src starts with one complete zstd frame that may
// decode within limit, and returns its length and the decoded size it
// declares (0 when it declares none). It walks the block headers only.
func zstdFrame(src []byte, limit int) (size, declared int, err error) {
	var h zstd.Header
	if err := h.Decode(src); err != nil {
		return 0, 0, spi.CorruptError("zstd", "reading the frame header", err)
	}
	if h.Skippable {
		return 0, 0, spi.CorruptError("zstd", "a skippable frame instead of a data frame", nil)
	}
	if h.HasFCS {
		if h.FrameContentSize > uint64(limit) {
			return 0, 0, fmt.Errorf("zstd: the frame declares %d bytes: %w", h.FrameContentSize, spi.TooLargeError("zstd", limit))
		}
		declared = int(h.FrameContentSize)
	}
	if !h.SingleSegment && h.WindowSize > uint64(max(2*limit, zstd.MinWindowSize)) {
		return 0, 0, fmt.Errorf("zstd: the frame's window of %d bytes is above twice the limit: %w", h.WindowSize, spi.TooLargeError("zstd", limit))
	}
	pos := h.HeaderSize
	for {
		if len(src)-pos < 3 {
			return 0, 0, spi.CorruptError("zstd", "truncated block header", nil)
		}
		bh := uint32(src[pos]) | uint32(src[pos+1])<<8 | uint32(src[pos+2])<<16
		pos += 3
		n := int(bh >> 3)
		switch (bh >> 1) & 3 {
		case 1: // RLE: one byte repeated n times
			n = 1
		case 3:
			return 0, 0, spi.CorruptError("zstd", "reserved block type", nil)
		}
		if len(src)-pos < n {
			return 0, 0, spi.CorruptError("zstd", "truncated block", nil)
		}
		pos += n
		if bh&1 != 0 {
			break
		}
	}
	if h.HasCheckSum {
		if len(src)-pos < 4 {
			return 0, 0, spi.CorruptError("zstd", "truncated checksum", nil)
		}
		pos += 4
	}
	return pos, declared, nil
}
