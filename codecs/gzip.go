package codecs

import (
	"bytes"
	"context"
	"encoding/binary"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/sluicerpc/sluice/spi"
)

// Gzip returns the gzip codec (wire profile "gzip", RFC 1952, from
// github.com/klauspost/compress/gzip at its default level): a body is
// exactly one gzip member; a second member or any other trailing byte is
// corrupt input. Writers and readers are pooled and Reset per call.
func Gzip() spi.Codec { return gzipCodec{} }

type gzipCodec struct{}

// gzipMaxRatio bounds how far deflate can expand (about 1032:1): the
// trailer's declared size is used as a capacity hint only up to it.
const gzipMaxRatio = 1032

type gzipWriter struct {
	w   *gzip.Writer
	out boundedWriter
}

var gzipWriters = sync.Pool{New: func() any {
	gw := &gzipWriter{}
	gw.w, _ = gzip.NewWriterLevel(&gw.out, gzip.DefaultCompression)
	return gw
}}

type gzipReader struct {
	r   gzip.Reader
	src bytes.Reader
	out spill
}

var gzipReaders = sync.Pool{New: func() any { return new(gzipReader) }}

func (gzipCodec) Name() string { return "gzip" }

func (gzipCodec) Compress(dst, src []byte) ([]byte, bool, error) {
	gw := gzipWriters.Get().(*gzipWriter)
	defer gzipWriters.Put(gw)
	gw.out.buf = dst
	gw.w.Reset(&gw.out)
	_, err := gw.w.Write(src)
	if err == nil {
		err = gw.w.Close()
	}
	out := gw.out.buf
	gw.out.buf = nil
	switch err {
	case nil:
		return out, true, nil
	case errNoFit:
		return dst, false, nil
	default:
		return dst, false, err
	}
}

func (gzipCodec) Decompress(ctx context.Context, dst, src []byte, limit int) ([]byte, error) {
	limit = max(limit, 0) // the contract says at least 0; a negative limit allows nothing
	if err := ctx.Err(); err != nil {
		return dst, err
	}
	gr := gzipReaders.Get().(*gzipReader)
	defer func() {
		gr.src.Reset(nil)
		gzipReaders.Put(gr)
	}()
	gr.src.Reset(src)
	if err := gr.r.Reset(&gr.src); err != nil {
		return dst, spi.CorruptError("gzip", "reading the header", err)
	}
	gr.r.Multistream(false)
	// The trailer's size (mod 2^32, unverified until the end) sizes the
	// output when it is plausible and within the limit; a body declaring
	// more than the limit decodes into pooled quanta until it is refused.
	hint := 0
	if len(src) >= 18 {
		if isize := int(binary.LittleEndian.Uint32(src[len(src)-4:])); isize <= limit {
			hint = min(isize, len(src)*gzipMaxRatio)
		}
	}
	out, err := readBounded(ctx, "gzip", &gr.r, dst, limit, trustedHint(hint, len(src)), &gr.out)
	if err != nil {
		return out, err
	}
	if gr.src.Len() != 0 {
		return dst, spi.CorruptError("gzip", "trailing bytes after the member", nil)
	}
	return out, nil
}
