package conformance

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/sluicerpc/sluice/spi"
)

// The codec checks call the codec under test only through the functions of
// this file: each recovers a panic and fails the check with the input that
// caused it, so that one bad input does not hide the others.

// newCodec returns the harness's codec, failing the check on an error or a
// nil codec.
func newCodec(t tb, h CodecHarness) spi.Codec {
	t.Helper()
	c, err := h.NewCodec()
	if err != nil {
		t.Fatalf("NewCodec: %v", err)
	}
	if c == nil {
		t.Fatalf("NewCodec returned a nil codec")
	}
	return c
}

// compressed is the result of one Compress call.
type compressed struct {
	out      []byte
	fits     bool
	err      error
	panicked any // what Compress panicked with, or nil
}

// compressRecovered calls c.Compress and recovers a panic.
func compressRecovered(c spi.Codec, dst, src []byte) (r compressed) {
	defer func() {
		if p := recover(); p != nil {
			r = compressed{panicked: p}
		}
	}()
	out, fits, err := c.Compress(dst, src)
	return compressed{out: out, fits: fits, err: err}
}

// decoded is the result of one Decompress call.
type decoded struct {
	out      []byte
	err      error
	panicked any // what Decompress panicked with, or nil
}

// decompressRecovered calls c.Decompress and recovers a panic.
func decompressRecovered(ctx context.Context, c spi.Codec, dst, src []byte, limit int) (r decoded) {
	defer func() {
		if p := recover(); p != nil {
			r = decoded{panicked: p}
		}
	}()
	out, err := c.Decompress(ctx, dst, src, limit)
	return decoded{out: out, err: err}
}

// compressBody compresses src with room to spare (twice its length plus
// 4 KiB) and returns the body alone, failing the check if the codec
// panics, errs or says it would not fit.
func compressBody(t tb, c spi.Codec, src []byte, what string) ([]byte, bool) {
	t.Helper()
	r := compressRecovered(c, make([]byte, 0, roomFor(len(src))), src)
	switch {
	case r.panicked != nil:
		t.Errorf("Compress(%s) panicked: %v", what, r.panicked)
	case r.err != nil:
		t.Errorf("Compress(%s): %v", what, r.err)
	case !r.fits:
		t.Errorf("Compress(%s) says its body would not fit in %d bytes", what, roomFor(len(src)))
	default:
		return r.out, true
	}
	return nil, false
}

// roomFor is the spare capacity the suite gives Compress for n bytes: any
// usable format fits in it.
func roomFor(n int) int { return 2*n + 4096 }

// keptDst reports what is wrong with out, the slice Decompress returned
// with an error for dst, whose first len(want) bytes were want: it must be
// dst[:len(dst)], with the caller's bytes unchanged. It returns "" when
// nothing is.
func keptDst(out, want []byte) string {
	switch {
	case len(out) != len(want):
		return fmt.Sprintf("returned %d bytes with its error, want dst[:len(dst)] (%d bytes)", len(out), len(want))
	case !bytes.Equal(out, want):
		return "changed the caller's bytes in dst"
	}
	return ""
}

// shape is one kind of payload the round trips use.
type shape struct {
	name string
	gen  func(rng *rand.Rand, n int) []byte
}

// shapes are the payloads of the round trips: incompressible, trivially
// compressible, and the two kinds RPC bodies mostly are.
var shapes = []shape{
	{"zeros", func(_ *rand.Rand, n int) []byte { return make([]byte, n) }},
	{"random", randomBytes},
	{"text", repetitiveText},
	{"json", jsonLike},
}

func randomBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

var words = strings.Fields("the quick brown fox jumps over a lazy dog while sluice decodes every frame under its limit and refuses the rest")

func repetitiveText(rng *rand.Rand, n int) []byte {
	var b bytes.Buffer
	for b.Len() < n {
		b.WriteString(words[rng.IntN(len(words))])
		b.WriteByte(' ')
	}
	return b.Bytes()[:n]
}

func jsonLike(rng *rand.Rand, n int) []byte {
	var b bytes.Buffer
	b.WriteByte('[')
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, `{"id":%d,"name":%q,"score":%.3f,"tags":[%q,%q],"ok":%t},`,
			rng.IntN(1_000_000), words[rng.IntN(len(words))], rng.Float64()*100,
			words[rng.IntN(len(words))], words[rng.IntN(len(words))], i%3 == 0)
	}
	return b.Bytes()[:n]
}

// frameless reports whether c is the identity profile, the one format
// without a frame: any bytes are a complete body of themselves, so
// truncation, trailing bytes and garbage cannot be told from a body, and
// no body decodes to more than its own length.
func frameless(c spi.Codec) bool { return c.Name() == "identity" }
