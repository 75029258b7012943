package conformance

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/sluicerpc/sluice/spi"
)

// The codec checks of round trips, limits, names and concurrent use. Every
// input is drawn from a fixed seed: a failure reproduces.

// roundTripSizes are the payload sizes of RoundTrips: empty, tiny, both
// sides of the 1024-byte compression threshold, and two that span many
// decode quanta.
var roundTripSizes = []int{0, 1, 100, 1023, 1024, 64 << 10, 1 << 20}

// dstPrefix is what the caller already holds in dst: the codec must append
// after it and keep it.
var dstPrefix = []byte("caller's bytes:")

// checkCodecName: Name is a valid wire profile name and never changes.
func checkCodecName(t tb, h CodecHarness) {
	c := newCodec(t, h)
	name := c.Name()
	if !spi.ValidCodecName(name) {
		t.Fatalf("Name() = %q: not a valid wire profile name (1 to 64 bytes of a-z, 0-9, '-', '_', '.')", name)
	}
	for range 3 {
		if again := c.Name(); again != name {
			t.Fatalf("Name() = %q, then %q: it must never change", name, again)
		}
	}
	if other := newCodec(t, h).Name(); other != name {
		t.Errorf("a second NewCodec's Name() = %q, the first's %q", other, name)
	}
}

// checkRoundTrips: every size and shape compresses into dst's spare
// capacity and decodes back exactly; Compress with too little room says so
// and leaves dst as it was; both keep the caller's bytes.
func checkRoundTrips(t tb, h CodecHarness) {
	c := newCodec(t, h)
	rng := seeded(12)
	for _, s := range shapes {
		for _, n := range roundTripSizes {
			roundTrip(t, c, s.gen(rng, n), fmt.Sprintf("%d bytes of %s", n, s.name))
		}
	}
}

// roundTrip checks one payload.
func roundTrip(t tb, c spi.Codec, src []byte, what string) {
	t.Helper()
	dst := make([]byte, len(dstPrefix), len(dstPrefix)+roomFor(len(src)))
	copy(dst, dstPrefix)
	r := compressRecovered(c, dst, src)
	switch {
	case r.panicked != nil:
		t.Errorf("Compress(%s) panicked: %v", what, r.panicked)
		return
	case r.err != nil:
		t.Errorf("Compress(%s): %v", what, r.err)
		return
	case !r.fits:
		t.Errorf("Compress(%s) says it would not fit in %d spare bytes", what, roomFor(len(src)))
		return
	}
	if !grewInPlace(t, "Compress("+what+")", r.out, dst) {
		return
	}
	body := r.out[len(dstPrefix):]

	// Too little room: would not fit, dst unchanged.
	// (A large payload skips the middle case: under -race a compression
	// of a megabyte takes a noticeable part of a second.)
	for _, spare := range []int{0, len(body) / 2, len(body) - 1} {
		if spare < 0 || (spare == 0 && len(body) == 0) || (spare == len(body)/2 && len(src) > largePayload) {
			continue
		}
		small := make([]byte, len(dstPrefix), len(dstPrefix)+spare)
		copy(small, dstPrefix)
		s := compressRecovered(c, small, src)
		switch {
		case s.panicked != nil:
			t.Errorf("Compress(%s) into %d spare bytes panicked: %v", what, spare, s.panicked)
		case s.err != nil:
			t.Errorf("Compress(%s) into %d spare bytes: %v (the body takes %d: it should say it would not fit)", what, spare, s.err, len(body))
		case s.fits:
			// A codec may compress differently from call to call; a
			// smaller body that fits must still be one, in place.
			if grewInPlace(t, fmt.Sprintf("Compress(%s) into %d spare bytes", what, spare), s.out, small) {
				decodesTo(t, c, s.out[len(dstPrefix):], src, what+" (compressed into less room)")
			}
		case len(s.out) != len(dstPrefix) || !bytes.Equal(s.out, dstPrefix):
			t.Errorf("Compress(%s) into %d spare bytes said it would not fit but returned %d bytes, want dst unchanged (%d)", what, spare, len(s.out), len(dstPrefix))
		}
		if !bytes.Equal(small, dstPrefix) {
			t.Errorf("Compress(%s) into %d spare bytes changed the caller's bytes in dst", what, spare)
		}
	}
	decodesTo(t, c, body, src, what)
}

// grewInPlace checks that out, returned by call for dst, is dst extended
// within its capacity (the same array, never grown) with dst's bytes
// unchanged.
func grewInPlace(t tb, call string, out, dst []byte) bool {
	t.Helper()
	switch {
	case len(out) < len(dst) || cap(out) != cap(dst) || &out[:1][0] != &dst[:1][0]:
		t.Errorf("%s returned a slice of len %d cap %d for dst of len %d cap %d: it must write into dst's spare capacity, never grow it", call, len(out), cap(out), len(dst), cap(dst))
		return false
	case !bytes.Equal(out[:len(dst)], dst) || !bytes.Equal(dst, dstPrefix):
		t.Errorf("%s changed the caller's bytes in dst", call)
		return false
	}
	return true
}

// largePayload is the size above which roundTrip and decodesTo skip the
// cases that a smaller payload has already covered.
const largePayload = 64 << 10

// decodesTo checks that body decodes to want with limit len(want), into a
// nil dst, into a dst holding the caller's bytes with room to spare, and
// into one with none (the last two only, for a large payload).
func decodesTo(t tb, c spi.Codec, body, want []byte, what string) {
	t.Helper()
	for _, spare := range []int{-1, len(want) + 1, 0} {
		if spare == -1 && len(want) > largePayload {
			continue
		}
		var dst []byte
		if spare >= 0 {
			dst = make([]byte, len(dstPrefix), len(dstPrefix)+spare)
			copy(dst, dstPrefix)
		}
		prefix := bytes.Clone(dst)
		r := decompressRecovered(context.Background(), c, dst, body, len(want))
		switch {
		case r.panicked != nil:
			t.Errorf("Decompress(%s) panicked: %v", what, r.panicked)
			return
		case r.err != nil:
			t.Errorf("Decompress(%s, limit %d): %v", what, len(want), r.err)
			return
		case len(r.out) < len(prefix) || !bytes.Equal(r.out[:len(prefix)], prefix) || !bytes.Equal(dst, prefix):
			t.Errorf("Decompress(%s) into a dst of %d bytes did not keep them", what, len(prefix))
			return
		case !bytes.Equal(r.out[len(prefix):], want):
			t.Errorf("Decompress(%s) returned %d bytes after dst's, want the %d compressed (first difference at %d)", what, len(r.out)-len(prefix), len(want), firstDiff(r.out[len(prefix):], want))
			return
		}
	}
}

// firstDiff is the index of the first byte where a and b differ.
func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// checkLimitIsExact: a body decodes under a limit of exactly its size, and
// one byte less fails with ErrDecodedTooLarge, keeping dst.
func checkLimitIsExact(t tb, h CodecHarness) {
	c := newCodec(t, h)
	rng := seeded(13)
	payloads := []struct {
		what string
		src  []byte
	}{
		{"empty", nil},
		{"1 byte", []byte{'x'}},
		{"10000 bytes of text", repetitiveText(rng, 10_000)},
		{"1 KiB random", randomBytes(rng, 1024)},
		{"3 decode quanta of zeros", make([]byte, 3*spi.DecodeQuantum)},
		{"a quantum and a byte of json", jsonLike(rng, spi.DecodeQuantum+1)},
	}
	for _, p := range payloads {
		body, ok := compressBody(t, c, p.src, p.what)
		if !ok {
			continue
		}
		decodesTo(t, c, body, p.src, p.what)
		if len(p.src) == 0 {
			continue
		}
		for _, limit := range slices.Compact([]int{len(p.src) - 1, len(p.src) / 2, 0}) {
			dst := bytes.Clone(dstPrefix)
			r := decompressRecovered(context.Background(), c, dst, body, limit)
			switch {
			case r.panicked != nil:
				t.Errorf("Decompress(%s, limit %d) panicked: %v", p.what, limit, r.panicked)
			case !errors.Is(r.err, spi.ErrDecodedTooLarge):
				t.Errorf("Decompress(%s, limit %d) = %d bytes, %v; want an error wrapping spi.ErrDecodedTooLarge", p.what, limit, len(r.out)-len(dst), r.err)
			default:
				if bad := keptDst(r.out, dstPrefix); bad != "" {
					t.Errorf("Decompress(%s, limit %d) %s", p.what, limit, bad)
				}
			}
		}
	}
}

// checkCodecConcurrentUse: goroutines compress and decompress different
// inputs on one codec at once, and every result is exact.
func checkCodecConcurrentUse(t tb, h CodecHarness) {
	c := newCodec(t, h)
	const goroutines, rounds = 8, 8
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			rng := seeded(uint64(100 + g))
			for i := range rounds {
				s := shapes[(g+i)%len(shapes)]
				n := []int{0, 100, 1500, 20 << 10, 70 << 10}[(g*rounds+i)%5]
				src := s.gen(rng, n)
				what := fmt.Sprintf("goroutine %d round %d: %d bytes of %s", g, i, n, s.name)
				body, ok := compressBody(t, c, src, what)
				if !ok {
					return
				}
				r := decompressRecovered(context.Background(), c, nil, body, len(src))
				switch {
				case r.panicked != nil:
					t.Errorf("Decompress(%s) panicked: %v", what, r.panicked)
					return
				case r.err != nil:
					t.Errorf("Decompress(%s): %v", what, r.err)
					return
				case !bytes.Equal(r.out, src):
					t.Errorf("Decompress(%s) returned %d bytes that differ from the %d compressed", what, len(r.out), len(src))
					return
				}
			}
		})
	}
	wg.Wait()
}
