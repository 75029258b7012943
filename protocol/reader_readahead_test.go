package protocol

import (
	"bytes"
	"io"
	"math/rand/v2"
	"testing"
)

// countingReader records the size of every Read it serves.
type countingReader struct {
	r     io.Reader
	reads []int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if n > 0 {
		c.reads = append(c.reads, n)
	}
	return n, err
}

func messageFrames(t *testing.T, n, size int) []byte {
	t.Helper()
	var b []byte
	for i := range n {
		body := bytes.Repeat([]byte{byte(i)}, size)
		var err error
		if b, err = AppendMessage(b, uint64(i+1), &Message{Body: body}); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

// TestTheLargeReadAheadReadsInLargeChunks: with SetLargeReadAhead on, a
// run of 1 KiB frames is read 32 KiB at a time (8 times fewer reads than
// the 4 KiB read-ahead), and off again it goes back to 4 KiB reads.
func TestTheLargeReadAheadReadsInLargeChunks(t *testing.T) {
	for _, large := range []bool{false, true} {
		src := &countingReader{r: bytes.NewReader(messageFrames(t, 256, 1024))}
		r := NewReader(src, Limits{MaxFrameSize: 1 << 20})
		r.SetLargeReadAhead(large)
		for {
			if _, _, err := r.ReadFrame(); err != nil {
				if err != io.EOF {
					t.Fatal(err)
				}
				break
			}
		}
		want := DefaultReadBufferSize
		if large {
			want = LargeReadBufferSize
		}
		if src.reads[0] != want {
			t.Errorf("large=%v: reads of %v, want %d bytes each", large, src.reads[:3], want)
		}
	}
}

// TestSwitchingTheReadAheadLosesNoByte toggles the read-ahead at random
// between frames of random sizes: every frame arrives intact and in
// order, and a switch while bytes are buffered waits for them.
func TestSwitchingTheReadAheadLosesNoByte(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var b []byte
	var sizes []int
	for i := range 2000 {
		n := rng.IntN(9000)
		sizes = append(sizes, n)
		var err error
		if b, err = AppendMessage(b, uint64(i+1), &Message{Body: bytes.Repeat([]byte{byte(i)}, n)}); err != nil {
			t.Fatal(err)
		}
	}
	// Reads of random sizes, as a socket serves them.
	src := &chunkyReader{b: b, rng: rng}
	r := NewReader(src, Limits{MaxFrameSize: 1 << 20})
	for i, n := range sizes {
		r.SetLargeReadAhead(rng.IntN(2) == 0)
		h, p, err := r.ReadFrame()
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		var m Message
		if err := ParseMessage(h, p, Limits{MaxFrameSize: 1 << 20}, &m); err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if h.ID != uint64(i+1) || len(m.Body) != n || (n > 0 && (m.Body[0] != byte(i) || m.Body[n-1] != byte(i))) {
			t.Fatalf("frame %d: id %d, %d bytes, want id %d, %d bytes of %d", i, h.ID, len(m.Body), i+1, n, byte(i))
		}
	}
	if _, _, err := r.ReadFrame(); err != io.EOF {
		t.Fatalf("after the last frame: %v, want EOF", err)
	}
	if r.largep != nil {
		t.Error("the large read-ahead is still held after the Reader failed")
	}
}

type chunkyReader struct {
	b   []byte
	rng *rand.Rand
}

func (c *chunkyReader) Read(p []byte) (int, error) {
	if len(c.b) == 0 {
		return 0, io.EOF
	}
	n := min(len(p), len(c.b), 1+c.rng.IntN(40000))
	copy(p, c.b[:n])
	c.b = c.b[n:]
	return n, nil
}
