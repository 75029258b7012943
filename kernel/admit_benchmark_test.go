package kernel_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/sluicerpc/sluice/kernel"
	"github.com/sluicerpc/sluice/limiters/tokenbucket"
	"github.com/sluicerpc/sluice/limiters/window"
	"github.com/sluicerpc/sluice/spi"
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

	admitRefused := func(b *testing.B, f *fixture) {
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
		admitRefused(b, f)
	})
	b.Run("after-64-updates", func(b *testing.B) {
		f := newFixture(b)
		f.enable(ampleOptions(1 << 20))
		applyUpdates(f, 64)
		admitRelease(b, f)
	})
	// The rate routes: Global concurrency plus a Method rate limit (the
	// DESIGN.md section 7 budget route), ample, on the system clock.
	rateOpts := func(s spi.Spec) kernel.Options {
		return kernel.Options{Global: conc(1 << 20), Methods: map[string]kernel.Rule{echoSay: {Limits: []spi.Spec{s}}}}
	}
	ampleBucket := tokenbucket.ContinuousSpec(1<<30, 1<<30, time.Second)
	b.Run("tokenbucket-permit", func(b *testing.B) {
		f := newFixture(b)
		f.enable(rateOpts(ampleBucket))
		admitRelease(b, f)
	})
	b.Run("tokenbucket-reject", func(b *testing.B) {
		f := newFixture(b)
		f.enable(rateOpts(tokenbucket.Spec(1, 1, time.Hour)))
		f.grant(f.say).Release() // the one token
		admitRefused(b, f)
	})
	b.Run("fixedwindow-permit", func(b *testing.B) {
		f := newFixture(b)
		f.enable(rateOpts(window.FixedSpec(1<<30, time.Millisecond)))
		admitRelease(b, f)
	})
	b.Run("slidingwindow-permit", func(b *testing.B) {
		f := newFixture(b)
		f.enable(rateOpts(window.SlidingSpec(1<<30, 4*time.Millisecond, 4)))
		admitRelease(b, f)
	})
	b.Run("after-64-rate-updates", func(b *testing.B) {
		f := newFixture(b)
		f.enable(rateOpts(ampleBucket))
		for i := range 64 {
			f.update(rateOpts(tokenbucket.ContinuousSpec(1<<30-int64(i%2), 1<<30, time.Second)))
		}
		f.update(rateOpts(ampleBucket))
		admitRelease(b, f)
	})
	b.Run("x-time-rate-allow", func(b *testing.B) {
		// The peer, in the same run: one limiter's Allow, which reads
		// the clock itself as the kernel does once per rate request.
		l := rate.NewLimiter(rate.Every(time.Nanosecond), 1<<30)
		b.ReportAllocs()
		for b.Loop() {
			if !l.Allow() {
				b.Fatal("refused")
			}
		}
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
	partOpts := func(version uint64) kernel.Options {
		o := ampleOptions(1 << 20)
		o.Partition = &kernel.PartitionPolicy{
			Selector: byTenant(version), MaxPartitions: 1 << 20, IdleTimeout: time.Hour,
			Rule: conc(1 << 20),
		}
		return o
	}
	partitionBench := func(b *testing.B, f *fixture) {
		var p kernel.Permit
		req := kernel.Request{Method: f.say, Metadata: md{"tenant": "acme"}}
		f.k.Capture(&p)
		if err := p.Admit(ctx, req); err != nil { // creates the key
			b.Fatal(err)
		}
		p.Release()
		b.ReportAllocs()
		for b.Loop() {
			f.k.Capture(&p)
			if err := p.Admit(ctx, req); err != nil {
				b.Fatal(err)
			}
			p.Release()
		}
	}
	b.Run("partition-existing-key", func(b *testing.B) {
		f := newFixture(b)
		f.enable(partOpts(1))
		partitionBench(b, f)
	})
	b.Run("partition-new-key", func(b *testing.B) {
		// Every request brings a key the namespace has never seen; the
		// clock moves one IdleTimeout per request, so each insertion
		// also reclaims the previous, idle key (the steady state of a
		// high-churn key space).
		pf := newPartFixture(b)
		o := ampleOptions(1 << 20)
		o.Partition = &kernel.PartitionPolicy{Selector: byTenant(1), MaxPartitions: 1024, IdleTimeout: time.Millisecond, Rule: conc(4)}
		pf.enable(o)
		keys := make([]md, 4096)
		for i := range keys {
			keys[i] = md{"tenant": fmt.Sprint("tenant-", i)}
		}
		var p kernel.Permit
		i := 0
		b.ReportAllocs()
		for b.Loop() {
			pf.k.Capture(&p)
			if err := p.Admit(ctx, kernel.Request{Method: pf.say, Metadata: keys[i%len(keys)]}); err != nil {
				b.Fatal(err)
			}
			p.Release()
			pf.clock.Advance(time.Millisecond)
			i++
		}
	})
	b.Run("after-64-selector-replacements", func(b *testing.B) {
		f := newFixture(b)
		f.enable(partOpts(0))
		for v := range uint64(64) {
			f.update(partOpts(v + 1))
		}
		partitionBench(b, f)
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
