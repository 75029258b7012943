package conformance

import (
	"bytes"
	"compress/flate"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/sluicerpc/sluice/spi"
)

// This file holds the codec of the suite's own tests: raw deflate from the
// standard library, kept correct (a trailing-bytes check, a limit checked
// before output grows past it, the context checked every quantum), with
// switches that each break one contract on purpose.

// flateFaults are the ways the codec can be broken.
type flateFaults struct {
	noCap          bool // decodes the whole body, then compares with the limit
	prealloc       bool // reserves 16 times the limit before decoding
	offByOne       bool // allows one byte above the limit
	panicOnCorrupt bool // panics on the library's error
	ignoresCancel  bool // never checks its context
	sparseChecks   bool // checks its context every fourth quantum only
	finishesFirst  bool // decodes into a buffer of its own, noticing a cancellation only at the end
	acceptTrailing bool // no check for bytes after the body
	growsDst       bool // Compress appends whatever dst's capacity
	clobbersDst    bool // Decompress decodes over the caller's bytes
	badName        bool // a name that is not a valid profile name
}

// flateCodec is raw deflate (RFC 1951).
type flateCodec struct {
	f flateFaults

	writers sync.Pool // *flate.Writer
	readers sync.Pool // io.ReadCloser implementing flate.Resetter
}

var _ spi.Codec = (*flateCodec)(nil)

func newFlateCodec(f flateFaults) *flateCodec { return &flateCodec{f: f} }

func (c *flateCodec) Name() string {
	if c.f.badName {
		return "Deflate"
	}
	return "deflate"
}

// errFull is what fixedWriter returns once dst's capacity is spent.
var errFull = errors.New("no room left in dst")

// fixedWriter appends to buf without ever growing it.
type fixedWriter struct{ buf []byte }

func (w *fixedWriter) Write(p []byte) (int, error) {
	if len(p) > cap(w.buf)-len(w.buf) {
		return 0, errFull
	}
	w.buf = append(w.buf, p...)
	return len(p), nil
}

// growingWriter appends to buf, growing it: the growsDst fault.
type growingWriter struct{ buf []byte }

func (w *growingWriter) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	return len(p), nil
}

func (c *flateCodec) Compress(dst, src []byte) ([]byte, bool, error) {
	var w io.Writer
	fw := &fixedWriter{buf: dst}
	gw := &growingWriter{buf: dst}
	if c.f.growsDst {
		w = gw
	} else {
		w = fw
	}
	zw, _ := c.writers.Get().(*flate.Writer)
	if zw == nil {
		var err error
		if zw, err = flate.NewWriter(w, flate.BestSpeed); err != nil {
			return dst, false, err
		}
	} else {
		zw.Reset(w)
	}
	defer c.writers.Put(zw)
	_, err := zw.Write(src)
	if err == nil {
		err = zw.Close()
	}
	switch {
	case errors.Is(err, errFull):
		return dst, false, nil
	case err != nil:
		return dst, false, err
	case c.f.growsDst:
		return gw.buf, true, nil
	}
	return fw.buf, true, nil
}

func (c *flateCodec) Decompress(ctx context.Context, dst, src []byte, limit int) ([]byte, error) {
	if !c.f.ignoresCancel {
		if err := ctx.Err(); err != nil {
			return dst, err
		}
	}
	br := bytes.NewReader(src)
	zr, _ := c.readers.Get().(io.ReadCloser)
	if zr == nil {
		zr = flate.NewReader(br)
	} else if err := zr.(flate.Resetter).Reset(br, nil); err != nil {
		return dst, err
	}
	defer c.readers.Put(zr)

	start := len(dst)
	out := dst
	if c.f.finishesFirst {
		start, out = 0, nil
	}
	if c.f.clobbersDst {
		start, out = 0, dst[:0]
	}
	if c.f.prealloc {
		out = slices.Grow(out, 16*limit)
	}
	bound := limit + 1 // reading one byte more proves the output passes limit
	if c.f.offByOne {
		bound++
	}
	if c.f.noCap {
		bound = int(^uint(0) >> 1)
	}
	quanta := 0
	var cancelled error
	for {
		want := min(spi.DecodeQuantum, bound-(len(out)-start))
		out = slices.Grow(out, want)
		n, err := readSome(zr, out[len(out):len(out)+want])
		out = out[:len(out)+n]
		if !c.f.noCap && len(out)-start > limit+boolInt(c.f.offByOne) {
			return dst[:len(dst)], spi.TooLargeError(c.Name(), limit)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			if c.f.panicOnCorrupt {
				panic("deflate: " + err.Error())
			}
			return dst[:len(dst)], spi.CorruptError(c.Name(), "invalid deflate data", err)
		}
		quanta++
		if !c.f.ignoresCancel && (!c.f.sparseChecks || quanta%4 == 0) {
			if err := ctx.Err(); err != nil {
				if !c.f.finishesFirst {
					return dst[:len(dst)], err
				}
				cancelled = err
			}
		}
	}
	if cancelled != nil {
		return dst[:len(dst)], cancelled
	}
	if c.f.finishesFirst {
		out = append(dst, out...)
		start = len(dst)
	}
	if len(out)-start > limit+boolInt(c.f.offByOne) { // noCap: only now
		return dst[:len(dst)], spi.TooLargeError(c.Name(), limit)
	}
	if !c.f.acceptTrailing && br.Len() > 0 {
		return dst[:len(dst)], spi.CorruptError(c.Name(), "trailing bytes after the body", nil)
	}
	return out, nil
}

// readSome reads from r until p is full or r fails; io.EOF means the body
// ended (and may come with the last bytes).
func readSome(r io.Reader, p []byte) (int, error) {
	n := 0
	for n < len(p) {
		m, err := r.Read(p[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// flateBomb returns a raw deflate body decoding to exactly n zeros without
// compressing n bytes: after a sync flush the stream is byte-aligned and
// every later block refers back only to zeros, so the block that encodes
// one chunk of zeros after the first can be repeated as often as needed.
func flateBomb(n int64) ([]byte, error) {
	const chunk = 256 << 10
	if n < 2*chunk {
		var b bytes.Buffer
		zw, _ := flate.NewWriter(&b, flate.BestCompression)
		if _, err := io.CopyN(zw, zeroReader{}, n); err != nil {
			return nil, err
		}
		if err := zw.Close(); err != nil {
			return nil, err
		}
		return b.Bytes(), nil
	}
	zeros := make([]byte, chunk)
	var b bytes.Buffer
	zw, _ := flate.NewWriter(&b, flate.BestCompression)
	_, _ = zw.Write(zeros)
	_ = zw.Flush()
	head := len(b.Bytes())
	_, _ = zw.Write(zeros)
	_ = zw.Flush()
	repeat := bytes.Clone(b.Bytes()[head:])
	rest := n - 2*chunk
	out := bytes.Clone(b.Bytes())
	for ; rest >= chunk; rest -= chunk {
		out = append(out, repeat...)
	}
	b.Reset()
	zw.Reset(&b) // a fresh stream: its first block refers to nothing
	if _, err := zw.Write(zeros[:rest]); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	// The tail of a fresh stream holds only literals and references
	// within itself: valid after any prefix.
	return append(out, b.Bytes()...), nil
}

// zeroReader reads zeros forever.
type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// flateHarness is the harness of the fake codec with faults f.
func flateHarness(f flateFaults) CodecHarness {
	c := newFlateCodec(f)
	return CodecHarnessOf(func() (spi.Codec, error) { return c, nil }, flateBomb)
}

// identityCodec is the identity profile: a body is its own bytes. It has
// no frame, so the suite skips what needs one.
type identityCodec struct{}

var _ spi.Codec = identityCodec{}

func (identityCodec) Name() string { return "identity" }

func (identityCodec) Compress(dst, src []byte) ([]byte, bool, error) {
	if len(src) > cap(dst)-len(dst) {
		return dst, false, nil
	}
	return append(dst, src...), true, nil
}

func (identityCodec) Decompress(ctx context.Context, dst, src []byte, limit int) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return dst, err
	}
	if len(src) > limit {
		return dst, spi.TooLargeError("identity", limit)
	}
	out := slices.Grow(dst, len(src))
	for len(src) > 0 {
		n := min(len(src), spi.DecodeQuantum)
		out, src = append(out, src[:n]...), src[n:]
		if err := ctx.Err(); err != nil {
			return dst[:len(dst)], err
		}
	}
	return out, nil
}

// identityHarness is the harness of identityCodec, which has no bomb.
func identityHarness() CodecHarness {
	return CodecHarnessOf(func() (spi.Codec, error) { return identityCodec{}, nil },
		func(int64) ([]byte, error) { return nil, fmt.Errorf("identity: no bomb: %w", errors.ErrUnsupported) })
}
