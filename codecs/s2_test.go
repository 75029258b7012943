package codecs_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/klauspost/compress/s2"
	"github.com/sluicerpc/sluice/codecs"
	"github.com/sluicerpc/sluice/spi"
)

const quantum = spi.DecodeQuantum

// s2Sizes straddle the chunk size: the short last chunk is empty for
// multiples of the quantum.
var s2Sizes = []int{0, 1, quantum - 1, quantum, quantum + 1, 3 * quantum, 1 << 20}

// TestS2BodiesAreS2Streams: what S2 writes is an S2 stream that the
// library's own reader reads back, in chunks of one quantum and a short
// last one.
func TestS2BodiesAreS2Streams(t *testing.T) {
	for _, k := range []int{0, 1, 2} {
		for _, n := range s2Sizes {
			src, enc := body(t, codecs.S2(), k, n)
			got, err := io.ReadAll(s2.NewReader(bytes.NewReader(enc)))
			if err != nil || !bytes.Equal(got, src) {
				t.Fatalf("%s/%d: s2.Reader reads %d bytes, %v", shapes[k].name, n, len(got), err)
			}
			if chunks := len(s2Chunks(t, enc)); chunks != n/quantum+1 {
				t.Errorf("%s/%d: %d data chunks, want %d", shapes[k].name, n, chunks, n/quantum+1)
			}
		}
	}
}

// TestS2StreamCutAtAChunkBoundaryIsCorrupt: a stream cut after any full
// chunk is a valid shorter S2 stream, but not a sluice body: its last chunk
// is not short.
func TestS2StreamCutAtAChunkBoundaryIsCorrupt(t *testing.T) {
	for _, n := range []int{quantum, 3*quantum + 5} {
		_, enc := body(t, codecs.S2(), 2, n)
		for _, end := range s2Chunks(t, enc)[:n/quantum] { // every full chunk
			out, err := codecs.S2().Decompress(context.Background(), []byte("x"), enc[:end], 1<<30)
			if !errors.Is(err, spi.ErrCorrupt) || string(out) != "x" {
				t.Errorf("%d bytes cut after the chunk ending at %d: %d bytes, %v; want ErrCorrupt", n, end, len(out), err)
			}
		}
	}
}

// TestS2RefusesChunksSluiceNeverWrites: a stream of s2.Writer's default
// 1 MiB blocks, padding, an index or a second stream identifier is corrupt,
// and the error says which rule it breaks (the CRC would refuse most of
// them too, saying less).
func TestS2RefusesChunksSluiceNeverWrites(t *testing.T) {
	src := shapes[2].fill(3 * quantum)
	write := func(opts ...s2.WriterOption) []byte {
		var b bytes.Buffer
		w := s2.NewWriter(&b, opts...)
		if _, err := w.Write(src); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	_, canonical := body(t, codecs.S2(), 2, 100)
	cases := []struct {
		what, in, why string
	}{
		{"1 MiB blocks", string(write()), "more than 262144"},
		{"padding", string(write(s2.WriterBlockSize(quantum), s2.WriterPadding(1<<10))), "type 0xfe"},
		{"an index", string(write(s2.WriterBlockSize(quantum), s2.WriterAddIndex())), "type 0x99"},
		{"a second identifier", string(canonical[:10]) + string(canonical), "type 0xff"},
		{"no identifier", string(canonical[10:]), "stream identifier"},
		{"a snappy identifier", "\xff\x06\x00\x00sNaPpY" + string(canonical[10:]), "stream identifier"},
		{"a chunk shorter than its checksum", string(canonical[:10]) + "\x00\x03\x00\x00\x00\x00\x00", "shorter than its checksum"},
	}
	for _, c := range cases {
		out, err := codecs.S2().Decompress(context.Background(), []byte("x"), []byte(c.in), 1<<30)
		if !errors.Is(err, spi.ErrCorrupt) || string(out) != "x" || !strings.Contains(err.Error(), c.why) {
			t.Errorf("%s: %d bytes, %v; want ErrCorrupt saying %q", c.what, len(out), err, c.why)
		}
	}
}

// s2Chunks returns where each data chunk of a body ends.
func s2Chunks(t *testing.T, enc []byte) []int {
	t.Helper()
	var ends []int
	for pos := 10; pos < len(enc); {
		if len(enc)-pos < 4 {
			t.Fatalf("a truncated chunk header at %d", pos)
		}
		pos += 4 + (int(enc[pos+1]) | int(enc[pos+2])<<8 | int(enc[pos+3])<<16)
		ends = append(ends, pos)
	}
	return ends
}

func ExampleS2() {
	c := codecs.S2()
	msg := bytes.Repeat([]byte("sluice "), 100_000) // 700 000 bytes: 3 chunks
	body, fits, _ := c.Compress(make([]byte, 0, len(msg)), msg)
	out, err := c.Decompress(context.Background(), nil, body, len(msg))
	fmt.Println(fits, len(out) == len(msg), err)
	// Output: true true <nil>
}
