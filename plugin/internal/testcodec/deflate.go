// Package testcodec holds the codecs the plugin bridge's tests serve: a
// small reference codec (raw deflate from the standard library, keeping
// every rule of spi.Codec), and codecs that break or probe the contract on
// purpose. It is not the codecs module; it only lets the bridge be tested
// without it.
package testcodec

import (
	"bytes"
	"compress/flate"
	"context"
	"errors"
	"io"
	"slices"
	"sync"

	"github.com/sluicerpc/sluice/spi"
)

// DeflateName is the wire profile name of Deflate.
const DeflateName = "testcodec.deflate"

// Deflate returns the reference codec: raw deflate (RFC 1951, no header),
// encoders and decoders pooled. Decompress stops as soon as the output
// would pass its limit, refuses truncated, corrupt and trailing input, and
// checks its context before it starts and at every spi.DecodeQuantum of
// output.
func Deflate() spi.Codec { return deflateCodec{} }

type deflateCodec struct{}

func (deflateCodec) Name() string { return DeflateName }

var writers = sync.Pool{New: func() any {
	w, err := flate.NewWriter(nil, flate.DefaultCompression)
	if err != nil {
		panic(err) // only for an invalid level
	}
	return w
}}

var readers = sync.Pool{New: func() any { return flate.NewReader(bytes.NewReader(nil)) }}

// errNoRoom is the bounded writer's refusal: the output would not fit.
var errNoRoom = errors.New("testcodec: compressed form does not fit")

// boundedWriter appends to buf without ever growing it.
type boundedWriter struct{ buf []byte }

func (w *boundedWriter) Write(p []byte) (int, error) {
	if len(p) > cap(w.buf)-len(w.buf) {
		return 0, errNoRoom
	}
	w.buf = append(w.buf, p...)
	return len(p), nil
}

func (deflateCodec) Compress(dst, src []byte) ([]byte, bool, error) {
	out := &boundedWriter{buf: dst}
	w := writers.Get().(*flate.Writer)
	w.Reset(out)
	_, err := w.Write(src)
	if err == nil {
		err = w.Close()
	}
	w.Reset(nil)
	writers.Put(w)
	switch {
	case errors.Is(err, errNoRoom):
		return dst, false, nil
	case err != nil:
		return dst, false, err
	}
	return out.buf, true, nil
}

func (deflateCodec) Decompress(ctx context.Context, dst, src []byte, limit int) ([]byte, error) {
	return inflate(ctx, dst, src, limit, false)
}

// inflate is Deflate's Decompress; with trailing, bytes after the stream
// are ignored (Trailing's bug).
func inflate(ctx context.Context, dst, src []byte, limit int, trailing bool) ([]byte, error) {
	base := len(dst)
	if err := ctx.Err(); err != nil {
		return dst[:base], err
	}
	in := bytes.NewReader(src) // an io.ByteReader: flate reads no further than the stream
	r := readers.Get().(io.ReadCloser)
	defer readers.Put(r)
	if err := r.(flate.Resetter).Reset(in, nil); err != nil {
		return dst[:base], spi.CorruptError(DeflateName, "reset", err)
	}
	out, err := decodeBounded(ctx, dst, r, limit)
	if err != nil {
		return dst[:base], err
	}
	if in.Len() > 0 && !trailing {
		return dst[:base], spi.CorruptError(DeflateName, "trailing bytes after the stream", nil)
	}
	return out, nil
}

// decodeBounded appends r's output to dst, never more than limit bytes,
// checking ctx at every spi.DecodeQuantum of output.
func decodeBounded(ctx context.Context, dst []byte, r io.Reader, limit int) ([]byte, error) {
	base := len(dst)
	out := dst
	check := spi.DecodeQuantum // the output length of the next ctx check
	for {
		produced := len(out) - base
		if produced >= check {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			check += spi.DecodeQuantum
		}
		if produced == limit {
			var one [1]byte
			n, err := io.ReadFull(r, one[:])
			switch {
			case n > 0:
				return nil, spi.TooLargeError(DeflateName, limit)
			case err == io.EOF:
				return out, nil
			default:
				return nil, corrupt(err)
			}
		}
		if len(out) == cap(out) {
			out = slices.Grow(out, min(max(produced, 4096), limit-produced))
		}
		room := out[len(out):min(cap(out), base+limit, base+check)]
		n, err := r.Read(room)
		out = out[:len(out)+n]
		switch {
		case err == io.EOF:
			return out, nil
		case err != nil:
			return nil, corrupt(err)
		}
	}
}

func corrupt(err error) error {
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return spi.CorruptError(DeflateName, "truncated stream", err)
	}
	return spi.CorruptError(DeflateName, "corrupt stream", err)
}

// DeflateBomb returns one complete raw deflate body that decodes to
// exactly decoded zero bytes, built by a streaming encoder over a zero
// reader (the decoded bytes are never held).
func DeflateBomb(decoded int64) ([]byte, error) {
	if decoded < 0 {
		return nil, errors.New("testcodec: a bomb of a negative size")
	}
	var buf bytes.Buffer
	w, err := flate.NewWriter(&buf, flate.BestSpeed) // zeros: ~800:1, a GiB in about a second
	if err != nil {
		return nil, err
	}
	if _, err := io.CopyN(w, zeros{}, decoded); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
