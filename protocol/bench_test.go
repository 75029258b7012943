package protocol_test

import (
	"sync/atomic"
	"testing"

	"github.com/sluicerpc/sluice/protocol"
)

func BenchmarkParseHeader(b *testing.B) {
	frame := protocol.AppendPing(nil, [8]byte{})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := protocol.ParseHeader(frame, 1<<20); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseRequest(b *testing.B) {
	lim := protocol.DefaultLimits()
	frame := must(b)(protocol.AppendRequest(nil, 42, sampleRequest(b)))
	h, payload := split(b, frame)
	var r protocol.Request
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	for b.Loop() {
		if err := protocol.ParseRequest(h, payload, lim, &r); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppendRequest(b *testing.B) {
	r := sampleRequest(b)
	buf := make([]byte, 0, 1024)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = protocol.AppendRequest(buf[:0], 42, r); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(len(buf)))
}

func BenchmarkReadFrame(b *testing.B) {
	frame := must(b)(protocol.AppendRequest(nil, 42, sampleRequest(b)))
	r := protocol.NewReader(&loopReader{data: frame}, protocol.DefaultLimits())
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := r.ReadFrame(); err != nil {
			b.Fatal(err)
		}
	}
}

// discardCounter counts underlying Write calls.
type discardCounter struct{ calls atomic.Int64 }

func (d *discardCounter) Write(p []byte) (int, error) {
	d.calls.Add(1)
	return len(p), nil
}

func BenchmarkWriterParallel(b *testing.B) {
	frame := must(b)(protocol.AppendResponse(nil, 1, &protocol.Response{Body: make([]byte, 100)}))
	dc := &discardCounter{}
	w := protocol.NewWriter(dc, 0)
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := w.Write(frame); err != nil {
				b.Error(err)
				return
			}
		}
	})
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/float64(max(dc.calls.Load(), 1)), "frames/write")
}
