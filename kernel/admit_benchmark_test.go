package kernel_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluicerpc/sluice/kernel"
)

// ampleOptions is the immediate-permit route: Global, Service and Method
// concurrency, with limits no benchmark reaches.
func ampleOptions(limit int64) kernel.Options {
	return kernel.Options{
		Global:   conc(limit),
		Services: map[string]kernel.Rule{"echo": conc(limit)},
		Methods:  map[string]kernel.Rule{echoSay: conc(limit)},
	}
}

// applyUpdates publishes n updates alternating between resizes and queue
// policy changes, ending on the ample limits.
func applyUpdates(f *fixture, n int) {
	for i := range n {
		o := ampleOptions(1<<20 + int64(i%7))
		if i%2 == 1 {
			o = withQueue(o, 16+i, 1<<20+int64(i), time.Second+time.Duration(i)*time.Millisecond)
		}
		f.update(o)
	}
	f.update(ampleOptions(1 << 20))
}

func BenchmarkAdmit(b *testing.B) {
	ctx := context.Background()
	admitRelease := func(b *testing.B, f *fixture) {
		var p kernel.Permit
		req := kernel.Request{Method: f.say}
		b.ReportAllocs()
		for b.Loop() {
			if f.k.Capture(&p) {
				if err := p.Admit(ctx, req); err != nil {
					b.Fatal(err)
				}
				p.Release()
			}
		}
	}

	b.Run("disabled", func(b *testing.B) {
		f := newFixture(b)
		admitRelease(b, f)
	})
	b.Run("immediate-permit", func(b *testing.B) {
		f := newFixture(b)
		f.enable(ampleOptions(1 << 20))
		admitRelease(b, f)
	})
	b.Run("immediate-reject", func(b *testing.B) {
		f := newFixture(b)
		f.enable(ampleOptions(1))
		holder := f.grant(f.say)
		defer holder.Release()
		var p kernel.Permit
		req := kernel.Request{Method: f.say}
		b.ReportAllocs()
		for b.Loop() {
			f.k.Capture(&p)
			if err := p.Admit(ctx, req); err == nil {
				b.Fatal("granted")
			}
			p.Release()
		}
	})
	b.Run("after-64-updates", func(b *testing.B) {
		f := newFixture(b)
		f.enable(ampleOptions(1 << 20))
		applyUpdates(f, 64)
		admitRelease(b, f)
	})
	b.Run("queue-and-release", func(b *testing.B) {
		f := newFixture(b)
		f.enable(withQueue(ampleOptions(1), 8, 1<<20, time.Minute))
		start, done := make(chan struct{}), make(chan struct{})
		go func() {
			var p kernel.Permit
			for range start {
				f.k.Capture(&p)
				if err := p.Admit(ctx, kernel.Request{Method: f.say, Bytes: 64}); err != nil {
					panic(err)
				}
				p.Release()
				done <- struct{}{}
			}
		}()
		defer close(start)
		var h kernel.Permit
		b.ReportAllocs()
		for b.Loop() {
			f.k.Capture(&h)
			if err := h.Admit(ctx, kernel.Request{Method: f.say}); err != nil {
				b.Fatal(err)
			}
			start <- struct{}{}
			<-f.enqueued // the helper really waits
			h.Release()  // and this release hands it the unit
			<-done
		}
	})
	b.Run("parallel-immediate-permit", func(b *testing.B) {
		f := newFixture(b)
		f.enable(ampleOptions(1 << 20))
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			var p kernel.Permit
			req := kernel.Request{Method: f.say}
			for pb.Next() {
				f.k.Capture(&p)
				if err := p.Admit(ctx, req); err != nil {
					panic(err)
				}
				p.Release()
			}
		})
	})
}
