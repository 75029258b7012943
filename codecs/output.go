package codecs

import (
	"context"
	"errors"
	"io"

	"github.com/sluicerpc/sluice/spi"
)

// readBounded appends what r yields to dst and returns the extended slice,
// holding at most limit decoded bytes: it fails with spi.TooLargeError as
// soon as r has one byte more than limit, with spi.CorruptError when r
// fails (its io.ErrUnexpectedEOF, checksum and format errors), and with
// ctx's error, checked before the first read and after every
// spi.DecodeQuantum bytes of output. hint (at most limit is used) sizes the
// first allocation when dst has less spare capacity; past it the decoded
// part grows by doubling, never beyond limit. On error it returns
// dst[:len(dst)].
func readBounded(ctx context.Context, name string, r io.Reader, dst []byte, limit, hint int) ([]byte, error) {
	base := len(dst)
	if err := ctx.Err(); err != nil {
		return dst[:base], err
	}
	out := dst
	if hint = min(hint, limit); cap(out)-base < hint {
		out = grow(out, hint)
	}
	unchecked, idle := 0, 0
	for {
		room := limit - (len(out) - base)
		if room == 0 {
			n, err := probe(r)
			switch {
			case n > 0:
				return dst[:base], spi.TooLargeError(name, limit)
			case err == io.EOF:
				return out, nil
			default:
				return dst[:base], spi.CorruptError(name, "decoding", err)
			}
		}
		if len(out) == cap(out) {
			out = grow(out, min(room, max(len(out)-base, 4096)))
		}
		chunk := min(cap(out)-len(out), room, spi.DecodeQuantum-unchecked)
		n, err := r.Read(out[len(out) : len(out)+chunk])
		out = out[:len(out)+n]
		if unchecked += n; unchecked >= spi.DecodeQuantum {
			if cerr := ctx.Err(); cerr != nil {
				return dst[:base], cerr
			}
			unchecked = 0
		}
		switch {
		case err == io.EOF:
			return out, nil
		case err != nil:
			return dst[:base], spi.CorruptError(name, "decoding", err)
		case n == 0:
			if idle++; idle > 100 {
				return dst[:base], spi.CorruptError(name, "decoding", io.ErrNoProgress)
			}
		default:
			idle = 0
		}
	}
}

// probe reads one byte from r, retrying reads that return nothing, to tell
// a body that ends exactly at the limit from one that goes on.
func probe(r io.Reader) (int, error) {
	var b [1]byte
	for range 100 {
		n, err := r.Read(b[:])
		if n > 0 || err != nil {
			return n, err
		}
	}
	return 0, io.ErrNoProgress
}

// grow returns s with room for n more bytes, allocating exactly that much
// (rounded up to the allocator's size class only), unlike append's growth.
func grow(s []byte, n int) []byte {
	if cap(s)-len(s) >= n {
		return s
	}
	ns := make([]byte, len(s), len(s)+n)
	copy(ns, s)
	return ns
}

// errNoFit is returned by boundedWriter when the compressed form does not
// fit in the destination's spare capacity.
var errNoFit = errors.New("codecs: compressed form does not fit")

// boundedWriter appends to buf without ever growing it: a write that would
// pass cap(buf) fails with errNoFit.
type boundedWriter struct{ buf []byte }

func (w *boundedWriter) Write(p []byte) (int, error) {
	if cap(w.buf)-len(w.buf) < len(p) {
		return 0, errNoFit
	}
	w.buf = append(w.buf, p...)
	return len(p), nil
}
