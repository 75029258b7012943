package conformance

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/sluicerpc/sluice/spi"
)

// CorruptInput's inputs.
const (
	// garbageInputs random inputs of 32 to 4096 bytes, of which at most
	// garbageAccepted may decode: in a format with neither a magic number
	// nor a checksum (raw deflate, brotli), random bytes are a valid body
	// now and then, and refusing one would be a bug. Beyond that a codec
	// accepts what its format does not.
	garbageInputs   = 256
	garbageAccepted = 2
	// garbageLimit is the limit garbage decodes under.
	garbageLimit = 64 << 10
	// bitFlips sampled single-bit flips of a valid body.
	bitFlips = 384
	// largePrefixes sampled prefixes of the larger body.
	largePrefixes = 24
)

// checkCorruptInput: truncated bodies and bodies followed by trailing bytes
// fail with an error wrapping ErrCorrupt; random garbage fails; a bit flip
// fails or, in a format without a checksum, decodes to something within the
// limit. Nothing panics, and every error keeps dst. The identity profile
// has no frame (any bytes are a body): the check does not apply to it.
func checkCorruptInput(t tb, h CodecHarness) {
	c := newCodec(t, h)
	if frameless(c) {
		t.Skipf("%q has no frame: truncated, trailing and corrupt input are all bodies of their own", c.Name())
	}
	rng := seeded(15)
	small := jsonLike(rng, 3000)
	large := repetitiveText(rng, 300<<10)
	smallBody, ok1 := compressBody(t, c, small, "3000 bytes of json")
	largeBody, ok2 := compressBody(t, c, large, "300 KiB of text")
	if !ok1 || !ok2 {
		return
	}
	mustCorrupt := func(src []byte, limit int, what string) {
		t.Helper()
		r := decompressRecovered(context.Background(), c, bytes.Clone(dstPrefix), src, limit)
		switch {
		case r.panicked != nil:
			t.Errorf("Decompress(%s) panicked: %v", what, r.panicked)
		case !errors.Is(r.err, spi.ErrCorrupt):
			t.Errorf("Decompress(%s) = %d bytes, %v; want an error wrapping spi.ErrCorrupt", what, len(r.out)-len(dstPrefix), r.err)
		default:
			if bad := keptDst(r.out, dstPrefix); bad != "" {
				t.Errorf("Decompress(%s) %s", what, bad)
			}
		}
	}

	// Truncated: every prefix of the small body, a sample of the large.
	for n := range len(smallBody) {
		mustCorrupt(smallBody[:n], len(small), fmt.Sprintf("the first %d bytes of a %d-byte body", n, len(smallBody)))
	}
	for i := range largePrefixes {
		n := rng.IntN(len(largeBody))
		if i == 0 {
			n = len(largeBody) - 1
		}
		mustCorrupt(largeBody[:n], len(large), fmt.Sprintf("the first %d bytes of a %d-byte body", n, len(largeBody)))
	}

	// Trailing bytes: after a body, one byte, a few, and a second body.
	// The limit leaves room for both bodies' output, so only the trailing
	// bytes are wrong.
	for _, tail := range [][]byte{{0}, {0xff}, {1}, []byte("trailing garbage"), smallBody} {
		what := fmt.Sprintf("a body followed by %d trailing bytes", len(tail))
		if bytes.Equal(tail, smallBody) {
			what = "a body followed by a second body"
		}
		mustCorrupt(append(bytes.Clone(smallBody), tail...), 2*len(small), what)
	}

	// Garbage: an error, apart from a rare valid body; never a panic.
	accepted := 0
	for i := range garbageInputs {
		g := randomBytes(rng, 32+rng.IntN(4096-32))
		what := fmt.Sprintf("garbage input %d (%d random bytes)", i, len(g))
		r := decompressRecovered(context.Background(), c, bytes.Clone(dstPrefix), g, garbageLimit)
		switch {
		case r.panicked != nil:
			t.Errorf("Decompress(%s) panicked: %v", what, r.panicked)
		case r.err == nil:
			accepted++
			withinLimit(t, r, garbageLimit, what)
		default:
			if bad := keptDst(r.out, dstPrefix); bad != "" {
				t.Errorf("Decompress(%s) %s", what, bad)
			}
		}
	}
	t.Logf("%d of %d garbage inputs decoded without error", accepted, garbageInputs)
	if accepted > garbageAccepted {
		t.Errorf("%d of %d random inputs decoded without error (at most %d may, by chance): the codec accepts what is not a body", accepted, garbageInputs, garbageAccepted)
	}

	// Bit flips: an error, or (no checksum) output within the limit.
	silent := 0
	for i := range bitFlips {
		bit := rng.IntN(8 * len(smallBody))
		if i < 8 {
			bit = i // the first byte: a header, when the format has one
		}
		flipped := bytes.Clone(smallBody)
		flipped[bit/8] ^= 1 << (bit % 8)
		what := fmt.Sprintf("a body with bit %d flipped", bit)
		r := decompressRecovered(context.Background(), c, bytes.Clone(dstPrefix), flipped, len(small))
		switch {
		case r.panicked != nil:
			t.Errorf("Decompress(%s) panicked: %v", what, r.panicked)
		case r.err == nil:
			if withinLimit(t, r, len(small), what) && !bytes.Equal(r.out[len(dstPrefix):], small) {
				silent++
			}
		default:
			if bad := keptDst(r.out, dstPrefix); bad != "" {
				t.Errorf("Decompress(%s) %s", what, bad)
			}
		}
	}
	t.Logf("%d of %d bit flips decoded to other bytes without an error (only a format without a checksum may)", silent, bitFlips)
}

// withinLimit checks a successful decode of bad input: the caller's bytes
// kept and at most limit bytes after them.
func withinLimit(t tb, r decoded, limit int, what string) bool {
	t.Helper()
	switch {
	case len(r.out) < len(dstPrefix) || !bytes.Equal(r.out[:len(dstPrefix)], dstPrefix):
		t.Errorf("Decompress(%s) did not keep the caller's bytes in dst", what)
	case len(r.out)-len(dstPrefix) > limit:
		t.Errorf("Decompress(%s) returned %d bytes, above its limit of %d", what, len(r.out)-len(dstPrefix), limit)
	default:
		return true
	}
	return false
}
