package codecs

import (
	"context"
	"errors"
	"io"
	"sync"

	"github.com/sluicerpc/sluice/spi"
)

// readBounded appends what r yields to dst and returns the extended slice,
// holding at most limit decoded bytes: it fails with spi.TooLargeError as
// soon as r has one byte more than limit, with spi.CorruptError when r
// fails (its io.ErrUnexpectedEOF, checksum and format errors), and with
// ctx's error, checked after every spi.DecodeQuantum bytes of output (the
// caller checks it before any work). On error it returns dst[:len(dst)].
//
// Output goes first into dst's spare capacity, which is first grown to
// hint bytes (a size the body declares, trusted only up to limit and to
// trustedHint of the compressed size) when it has less;
// past that capacity it goes into pooled quanta of spi.DecodeQuantum bytes,
// copied at the end into one allocation of exactly the decoded size. So a
// body refused at its limit costs no allocation beyond the pool (never a
// doubling series of buffers), and an accepted one costs one allocation of
// its own size, none when dst has room.
func readBounded(ctx context.Context, name string, r io.Reader, dst []byte, limit, hint int, sp *spill) ([]byte, error) {
	base := len(dst)
	out := dst
	if hint = min(hint, limit); cap(out)-base < hint {
		out = grow(out, hint)
	}
	defer sp.release()
	unchecked, idle := 0, 0
	for {
		room := limit - (len(out) - base) - sp.n
		if room == 0 {
			n, err := sp.probe(r)
			switch {
			case n > 0:
				return dst[:base], spi.TooLargeError(name, limit)
			case err == io.EOF:
				return sp.join(out), nil
			default:
				return dst[:base], spi.CorruptError(name, "decoding", err)
			}
		}
		var buf []byte
		if len(out) < cap(out) {
			buf = out[len(out):cap(out)]
		} else {
			buf = sp.next()
		}
		buf = buf[:min(len(buf), room, spi.DecodeQuantum-unchecked)]
		n, err := r.Read(buf)
		if len(out) < cap(out) {
			out = out[:len(out)+n]
		} else {
			sp.n += n
		}
		if unchecked += n; unchecked >= spi.DecodeQuantum {
			if cerr := ctx.Err(); cerr != nil {
				return dst[:base], cerr
			}
			unchecked = 0
		}
		switch {
		case err == io.EOF:
			return sp.join(out), nil
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

// quantum is one pooled piece of spilled output.
type quantum [spi.DecodeQuantum]byte

var quanta = sync.Pool{New: func() any { return new(quantum) }}

// spill holds the output that did not fit the destination's capacity: n
// bytes in qs, every quantum full but the last. It lives in each codec's
// pooled decoder state, so that its list and probe byte cost no
// allocation per call.
type spill struct {
	qs  []*quantum
	n   int
	one [1]byte
}

// next returns the unused part of the last quantum, taking a new one when
// it is full.
func (s *spill) next() []byte {
	if used := s.n - (len(s.qs)-1)*spi.DecodeQuantum; len(s.qs) > 0 && used < spi.DecodeQuantum {
		return s.qs[len(s.qs)-1][used:]
	}
	q := quanta.Get().(*quantum)
	s.qs = append(s.qs, q)
	return q[:]
}

// join returns out followed by the spilled bytes, in one allocation of
// exactly their size when anything spilled.
func (s *spill) join(out []byte) []byte {
	if s.n == 0 {
		return out
	}
	all := make([]byte, len(out)+s.n)
	k := copy(all, out)
	for i, q := range s.qs {
		k += copy(all[k:], q[:min(spi.DecodeQuantum, s.n-i*spi.DecodeQuantum)])
	}
	return all
}

// release gives the quanta back to the pool.
func (s *spill) release() {
	for i, q := range s.qs {
		quanta.Put(q)
		s.qs[i] = nil
	}
	s.qs, s.n = s.qs[:0], 0
}

// probe reads one byte from r, retrying reads that return nothing, to tell
// a body that ends exactly at the limit from one that goes on.
func (s *spill) probe(r io.Reader) (int, error) {
	for range 100 {
		n, err := r.Read(s.one[:])
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

// trustedHint bounds the decoded size a body declares (a zstd frame's
// content size, gzip's ISIZE) by what its compressed size makes plausible
// before the output has been seen: max(DecodeQuantum, 16 x compressed).
// Memory follows bytes decoded, not bytes declared: a small frame that
// declares the whole limit costs at most one quantum up front, and its
// output beyond the hint spills into pooled quanta as it arrives.
func trustedHint(declared, compressed int) int {
	most := spi.DecodeQuantum
	if compressed < (1<<62)/16 {
		most = max(most, 16*compressed)
	}
	return min(declared, most)
}
