package flow_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"

	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/protocol/flow"
)

// result runs f in a goroutine and returns a channel of its error.
func result(f func() error) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- f() }()
	return ch
}

func ready(ch <-chan error) (error, bool) {
	select {
	case err := <-ch:
		return err, true
	default:
		return nil, false
	}
}

func TestReserveWaitsForReturns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := flow.NewSendWindow(10, maxWindow)
		if !w.TryReserve(15) {
			t.Fatal("refused")
		}
		done := result(func() error { return w.Reserve(context.Background(), 3) })
		synctest.Wait()
		if _, ok := ready(done); ok {
			t.Fatal("Reserve returned at credit -5")
		}
		if err := w.Update(5, 0); err != nil { // credit 0
			t.Fatal(err)
		}
		synctest.Wait()
		if _, ok := ready(done); ok {
			t.Fatal("Reserve returned at credit 0")
		}
		if err := w.Update(1, 0); err != nil { // credit 1: the 3 bytes borrow
			t.Fatal(err)
		}
		synctest.Wait()
		if err, ok := ready(done); !ok || err != nil {
			t.Fatalf("Reserve at credit 1: %v, returned %v", err, ok)
		}
		if w.Outstanding() != 12 {
			t.Fatalf("outstanding %d, want 12", w.Outstanding())
		}
	})
}

func TestReserveHonoursContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := flow.NewSendWindow(10, maxWindow)
		w.TryReserve(10)
		ctx, cancel := context.WithCancel(context.Background())
		done := result(func() error { return w.Reserve(ctx, 4) })
		synctest.Wait()
		cancel()
		synctest.Wait()
		if err, ok := ready(done); !ok || !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled Reserve: %v, returned %v", err, ok)
		}
		if err := w.Update(10, 0); err != nil {
			t.Fatal(err)
		}
		if w.Outstanding() != 0 {
			t.Fatalf("a cancelled waiter was granted: outstanding %d", w.Outstanding())
		}
	})
}

func TestReserveDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := flow.NewSendWindow(10, maxWindow)
		w.TryReserve(10)
		ctx, cancel := context.WithTimeout(context.Background(), 1e9)
		defer cancel()
		if err := w.Reserve(ctx, 1); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Reserve past its deadline: %v", err)
		}
	})
}

func TestCloseWakesWaiters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := flow.NewSendWindow(10, maxWindow)
		w.TryReserve(10)
		a := result(func() error { return w.Reserve(context.Background(), 1) })
		b := result(func() error { return w.Reserve(context.Background(), 0) })
		synctest.Wait()
		if err, ok := ready(b); !ok || err != nil {
			t.Fatalf("an empty message waited: %v, %v", err, ok)
		}
		w.Close()
		synctest.Wait()
		if err, ok := ready(a); !ok || !errors.Is(err, flow.ErrClosed) {
			t.Fatalf("Reserve on a window closed under it: %v, %v", err, ok)
		}
		if err := w.Update(10, 0); err != nil {
			t.Fatalf("Update on a closed window: %v", err)
		}
		if w.Outstanding() != 0 {
			t.Fatalf("outstanding %d", w.Outstanding())
		}
	})
}

// TestWaitersServedInOrder: with waiters queued, the credit goes to the
// oldest first, and a newcomer waits behind them even for a message that
// would fit.
func TestWaitersServedInOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := flow.NewSendWindow(10, maxWindow)
		w.TryReserve(10)
		var chans []<-chan error
		for _, n := range []uint64{8, 1, 1} {
			chans = append(chans, result(func() error { return w.Reserve(context.Background(), n) }))
			synctest.Wait() // queue them in this order
		}
		if w.TryReserve(1) {
			t.Fatal("TryReserve overtook the waiters")
		}
		if err := w.Update(2, 0); err != nil { // credit 2: the 8 borrows, nobody else
			t.Fatal(err)
		}
		synctest.Wait()
		if err, ok := ready(chans[0]); !ok || err != nil {
			t.Fatalf("oldest waiter: %v, %v", err, ok)
		}
		for i := 1; i < 3; i++ {
			if _, ok := ready(chans[i]); ok {
				t.Fatalf("waiter %d served at negative credit", i)
			}
		}
		if err := w.Update(8, 0); err != nil { // credit 2: both 1-byte waiters
			t.Fatal(err)
		}
		synctest.Wait()
		for i := 1; i < 3; i++ {
			if err, ok := ready(chans[i]); !ok || err != nil {
				t.Fatalf("waiter %d: %v, %v", i, err, ok)
			}
		}
		if w.Credit() != 0 {
			t.Fatalf("credit %d", w.Credit())
		}
	})
}

func TestReservePairWaitsOnConnectionAndWithdrawsStream(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := flow.NewSendWindow(100, maxWindow)
		c := flow.NewSendWindow(10, maxWindow)
		c.TryReserve(10)
		ctx, cancel := context.WithCancel(context.Background())
		done := result(func() error { return flow.ReservePair(ctx, s, c, 30) })
		synctest.Wait()
		if _, ok := ready(done); ok {
			t.Fatal("ReservePair returned on an exhausted connection window")
		}
		// The stream's reservation is held, not on the wire: the peer cannot return it.
		if err := s.Update(30, 0); !protocol.IsViolation(err) {
			t.Fatalf("a return of held bytes: %v", err)
		}
		cancel()
		synctest.Wait()
		if err, ok := ready(done); !ok || !errors.Is(err, context.Canceled) {
			t.Fatalf("%v, %v", err, ok)
		}
		if s.Outstanding() != 0 || c.Outstanding() != 10 {
			t.Fatalf("a failed ReservePair left charges: stream %d, connection %d", s.Outstanding(), c.Outstanding())
		}
	})
}

func TestReservePairSucceedsAfterConnectionReturns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := flow.NewSendWindow(100, maxWindow)
		c := flow.NewSendWindow(10, maxWindow)
		c.TryReserve(10)
		done := result(func() error { return flow.ReservePair(context.Background(), s, c, 30) })
		synctest.Wait()
		if err := c.Update(1, 0); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if err, ok := ready(done); !ok || err != nil {
			t.Fatalf("%v, %v", err, ok)
		}
		if s.Outstanding() != 30 || c.Outstanding() != 39 {
			t.Fatalf("stream %d, connection %d", s.Outstanding(), c.Outstanding())
		}
		// Committed: the stream's 30 bytes are on the wire and may be returned.
		if err := s.Update(30, 0); err != nil {
			t.Fatal(err)
		}
	})
}

func TestReservePairStreamClosedWhileWaitingOnConnection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := flow.NewSendWindow(100, maxWindow)
		c := flow.NewSendWindow(10, maxWindow)
		c.TryReserve(10)
		done := result(func() error { return flow.ReservePair(context.Background(), s, c, 30) })
		synctest.Wait()
		s.Close()
		synctest.Wait()
		if err, ok := ready(done); !ok || !errors.Is(err, flow.ErrClosed) {
			t.Fatalf("%v, %v", err, ok)
		}
		if err := c.Update(10, 0); err != nil {
			t.Fatal(err)
		}
		if s.Outstanding() != 0 || c.Outstanding() != 0 {
			t.Fatalf("stream %d, connection %d", s.Outstanding(), c.Outstanding())
		}
	})
}

// TestReservePairWaitingOnStreamHoldsNoConnectionCredit: a stream blocked on
// its own window does not take connection credit from the other streams.
func TestReservePairWaitingOnStreamHoldsNoConnectionCredit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		slow := flow.NewSendWindow(10, maxWindow)
		slow.TryReserve(10)
		c := flow.NewSendWindow(100, maxWindow)
		blocked := result(func() error { return flow.ReservePair(context.Background(), slow, c, 50) })
		synctest.Wait()
		if c.Outstanding() != 0 {
			t.Fatalf("a stream waiting on its own window holds %d bytes of connection credit", c.Outstanding())
		}
		other := flow.NewSendWindow(100, maxWindow)
		if err := flow.ReservePair(context.Background(), other, c, 100); err != nil {
			t.Fatal(err)
		}
		slow.Close()
		synctest.Wait()
		if err, _ := ready(blocked); !errors.Is(err, flow.ErrClosed) {
			t.Fatal(err)
		}
	})
}

// TestReservePairConnectionWaitersInOrder: streams waiting for connection
// credit are served in arrival order.
func TestReservePairConnectionWaitersInOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := flow.NewSendWindow(10, maxWindow)
		c.TryReserve(10)
		var chans []<-chan error
		for range 3 {
			s := flow.NewSendWindow(100, maxWindow)
			chans = append(chans, result(func() error { return flow.ReservePair(context.Background(), s, c, 10) }))
			synctest.Wait()
		}
		for i := range chans {
			if err := c.Update(10, 0); err != nil { // credit 10: exactly one 10-byte message
				t.Fatal(err)
			}
			synctest.Wait()
			for j := range chans {
				_, ok := ready(chans[j])
				if j == i && !ok {
					t.Fatalf("round %d: waiter %d not served", i, j)
				}
				if j > i && ok {
					t.Fatalf("round %d: waiter %d overtook waiter %d", i, j, i)
				}
			}
		}
	})
}
