package flow_test

import (
	"context"
	"testing"

	"github.com/sluicerpc/sluice/protocol/flow"
)

// BenchmarkSend: one message reserved on its stream and connection windows
// and returned, the sender's cost per message without waiting.
func BenchmarkSend(b *testing.B) {
	ctx := context.Background()
	s := flow.NewSendWindow(64<<10, maxWindow)
	c := flow.NewSendWindow(1<<20, maxWindow)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if err := flow.ReservePair(ctx, s, c, 1024); err != nil {
			b.Fatal(err)
		}
		if i%16 == 15 { // a return every quarter window, as the receiver batches them
			if err := s.Update(16<<10, 0); err != nil {
				b.Fatal(err)
			}
			if err := c.Update(16<<10, 0); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkReserve: Reserve on one window without waiting.
func BenchmarkReserve(b *testing.B) {
	ctx := context.Background()
	s := flow.NewSendWindow(64<<10, maxWindow)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if err := s.Reserve(ctx, 1024); err != nil {
			b.Fatal(err)
		}
		if i%16 == 15 {
			if err := s.Update(16<<10, 0); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkReceive: one message received and consumed on its stream and
// connection windows, the receiver's cost per message.
func BenchmarkReceive(b *testing.B) {
	rs := flow.NewRecvWindow(64<<10, maxWindow)
	rc := flow.NewRecvWindow(1<<20, maxWindow)
	b.ReportAllocs()
	for b.Loop() {
		if err := rs.OnMessage(1024); err != nil {
			b.Fatal(err)
		}
		if err := rc.OnMessage(1024); err != nil {
			b.Fatal(err)
		}
		rs.Consume(1024)
		rc.Consume(1024)
	}
}

// BenchmarkSendParallel: streams of their own on every P sharing one
// connection window, the contention on the connection's mutex.
func BenchmarkSendParallel(b *testing.B) {
	ctx := context.Background()
	c := flow.NewSendWindow(1<<30, maxWindow)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		s := flow.NewSendWindow(64<<10, maxWindow)
		for i := 0; pb.Next(); i++ {
			if err := flow.ReservePair(ctx, s, c, 1024); err != nil {
				b.Error(err)
				return
			}
			if i%16 == 15 {
				if err := s.Update(16<<10, 0); err != nil {
					b.Error(err)
					return
				}
				if err := c.Update(16<<10, 0); err != nil {
					b.Error(err)
					return
				}
			}
		}
	})
}

// BenchmarkWaitAndWake: a sender blocked on an exhausted window and woken
// by an update, the slow path (it allocates its waiter). Each iteration is
// one wait, one grant and one channel handoff back to the benchmark.
func BenchmarkWaitAndWake(b *testing.B) {
	ctx := context.Background()
	w := flow.NewSendWindow(1024, maxWindow)
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		for w.Reserve(ctx, 1024) == nil {
			sent <- struct{}{}
		}
	}()
	<-sent // the first fits without waiting
	b.ReportAllocs()
	for b.Loop() {
		if err := w.Update(1024, 0); err != nil {
			b.Fatal(err)
		}
		<-sent
	}
	w.Close()
	for range sent {
	}
}
