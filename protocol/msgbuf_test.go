package protocol

import (
	"bytes"
	"testing"
)

func TestMessageBuffersHoldTheirBytesInTheirClass(t *testing.T) {
	for _, n := range []int{0, 1, 63, 64, 65, 1000, 1024, 1025, 64 << 10, 1 << 20, 1<<20 + 1} {
		b := bytes.Repeat([]byte{7}, n)
		p := GetMessageBuffer(b)
		if !bytes.Equal(*p, b) {
			t.Fatalf("%d bytes: the buffer holds %d other bytes", n, len(*p))
		}
		want := max(64, 1)
		for want < n {
			want *= 2
		}
		if n > 1<<20 {
			want = n
		}
		if cap(*p) != want {
			t.Errorf("%d bytes: capacity %d, want %d (at most twice the message, at least 64)", n, cap(*p), want)
		}
		PutMessageBuffer(p)
	}
	PutMessageBuffer(nil)
}

func TestMessageCost(t *testing.T) {
	for _, c := range []struct {
		wire int
		orig uint64
		want uint64
	}{{0, 0, 64}, {1, 1, 64}, {64, 64, 64}, {65, 65, 65}, {10, 1 << 20, 1 << 20}, {1 << 20, 1, 1 << 20}} {
		if got := MessageCost(c.wire, c.orig); got != c.want {
			t.Errorf("MessageCost(%d, %d) = %d, want %d", c.wire, c.orig, got, c.want)
		}
	}
}

func TestMessageBuffersDoNotAllocateInSteadyState(t *testing.T) {
	b := make([]byte, 1000)
	PutMessageBuffer(GetMessageBuffer(b))
	if n := testing.AllocsPerRun(100, func() { PutMessageBuffer(GetMessageBuffer(b)) }); n != 0 {
		t.Errorf("%v allocations per Get and Put", n)
	}
}
