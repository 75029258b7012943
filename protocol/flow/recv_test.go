package flow_test

import (
	"errors"
	"testing"

	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/protocol/flow"
)

func TestRecvWindowBatchesAtAQuarter(t *testing.T) {
	w := flow.NewRecvWindow(100, maxWindow)
	for range 10 {
		if err := w.OnMessage(10); err != nil {
			t.Fatal(err)
		}
	}
	// Outstanding 100: the sender's credit is 0, so the first consume returns at once.
	if r, send := w.Consume(10); !send || r != 10 {
		t.Fatalf("Consume at exhausted credit = %d, %v; want 10, true", r, send)
	}
	// Outstanding 90, credit 10: batch until 25 bytes are pending.
	if r, send := w.Consume(10); send {
		t.Fatalf("Consume(10) sent %d below a quarter", r)
	}
	if r, send := w.Consume(10); send {
		t.Fatalf("Consume(10) sent %d below a quarter", r)
	}
	if w.Pending() != 20 {
		t.Fatalf("pending %d, want 20", w.Pending())
	}
	if r, send := w.Consume(10); !send || r != 30 {
		t.Fatalf("Consume reaching a quarter = %d, %v; want 30, true", r, send)
	}
	if w.Outstanding() != 60 || w.Pending() != 0 {
		t.Fatalf("outstanding %d pending %d, want 60 and 0", w.Outstanding(), w.Pending())
	}
}

func TestRecvWindowQuarterIsInclusive(t *testing.T) {
	w := flow.NewRecvWindow(100, maxWindow)
	if err := w.OnMessage(25); err != nil {
		t.Fatal(err)
	}
	if r, send := w.Consume(24); send {
		t.Fatalf("sent %d at 24/100", r)
	}
	if r, send := w.Consume(1); !send || r != 25 {
		t.Fatalf("at exactly a quarter: %d, %v", r, send)
	}
	// An odd window: a quarter of 101 is 25.25, so 25 is not enough.
	w = flow.NewRecvWindow(101, maxWindow)
	if err := w.OnMessage(26); err != nil {
		t.Fatal(err)
	}
	if _, send := w.Consume(25); send {
		t.Fatal("sent 25 of 101")
	}
	if r, send := w.Consume(1); !send || r != 26 {
		t.Fatalf("26 of 101: %d, %v", r, send)
	}
}

func TestRecvWindowBorrowReturnsAtOnce(t *testing.T) {
	w := flow.NewRecvWindow(100, maxWindow)
	if err := w.OnMessage(90); err != nil {
		t.Fatal(err)
	}
	if err := w.OnMessage(50); err != nil { // borrows: credit 10
		t.Fatalf("a borrowing message: %v", err)
	}
	// The sender's credit is -40: even a small consume is returned at once.
	if r, send := w.Consume(1); !send || r != 1 {
		t.Fatalf("Consume while borrowed = %d, %v", r, send)
	}
}

func TestRecvWindowNoCreditIsViolation(t *testing.T) {
	w := flow.NewRecvWindow(100, maxWindow)
	if err := w.OnMessage(100); err != nil {
		t.Fatal(err)
	}
	if err := w.OnMessage(1); !protocol.IsViolation(err) {
		t.Fatalf("a message at credit 0: %v", err)
	}
	if err := w.OnMessage(0); err != nil {
		t.Fatalf("an empty message at credit 0: %v", err)
	}
	if w.Outstanding() != 100 {
		t.Fatalf("a refused message was recorded: outstanding %d", w.Outstanding())
	}
}

func TestRecvWindowSecondBorrowIsViolation(t *testing.T) {
	w := flow.NewRecvWindow(100, maxWindow)
	if err := w.OnMessage(60); err != nil {
		t.Fatal(err)
	}
	if err := w.OnMessage(60); err != nil { // borrows: credit -20
		t.Fatal(err)
	}
	if err := w.OnMessage(60); !protocol.IsViolation(err) {
		t.Fatalf("a second borrowing message: %v", err)
	}
	// Consumed but not yet announced bytes do not count: the sender cannot know of them.
	if _, send := w.Consume(60); !send {
		t.Fatal("not returned at once")
	}
	if err := w.OnMessage(60); err != nil { // credit 40 after the announced return
		t.Fatalf("after the return: %v", err)
	}
}

func TestRecvWindowPendingDoesNotCountAsCredit(t *testing.T) {
	w := flow.NewRecvWindow(100, maxWindow)
	if err := w.OnMessage(90); err != nil {
		t.Fatal(err)
	}
	if _, send := w.Consume(10); send { // credit 10 > 0 and 10 < 25: kept
		t.Fatal("sent")
	}
	if err := w.OnMessage(10); err != nil { // credit 10: fits exactly
		t.Fatal(err)
	}
	if err := w.OnMessage(1); !protocol.IsViolation(err) {
		t.Fatalf("10 consumed bytes were never announced, yet a message at credit 0 passed: %v", err)
	}
}

func TestRecvWindowDropReturnsAtOnce(t *testing.T) {
	w := flow.NewRecvWindow(100, maxWindow)
	if err := w.OnMessage(10); err != nil {
		t.Fatal(err)
	}
	if err := w.OnMessage(5); err != nil {
		t.Fatal(err)
	}
	if _, send := w.Consume(10); send {
		t.Fatal("sent")
	}
	if r, send := w.Drop(5); !send || r != 15 {
		t.Fatalf("Drop = %d, %v; want the dropped and the kept bytes, 15, true", r, send)
	}
	if r, send := w.Drop(0); send {
		t.Fatalf("Drop(0) with nothing pending sent %d", r)
	}
	if w.Outstanding() != 0 {
		t.Fatalf("outstanding %d", w.Outstanding())
	}
}

func TestRecvWindowZeroLength(t *testing.T) {
	w := flow.NewRecvWindow(1, maxWindow)
	if err := w.OnMessage(5); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := w.OnMessage(0); err != nil {
			t.Fatal(err)
		}
		if _, send := w.Consume(0); send {
			t.Fatal("Consume(0) sent")
		}
	}
}

func TestRecvWindowOverConsumePanics(t *testing.T) {
	w := flow.NewRecvWindow(100, maxWindow)
	if err := w.OnMessage(10); err != nil {
		t.Fatal(err)
	}
	w.Consume(4)
	for _, f := range []func(){func() { w.Consume(7) }, func() { w.Drop(7) }} {
		func() {
			defer func() {
				if recover() == nil {
					t.Error("no panic consuming more than received")
				}
			}()
			f()
		}()
	}
}

func TestRecvWindowGrow(t *testing.T) {
	w := flow.NewRecvWindow(100, 200)
	if err := w.OnMessage(100); err != nil {
		t.Fatal(err)
	}
	w.Consume(10) // credit 0: returned at once
	w.Consume(5)  // kept
	r, g, err := w.Grow(50)
	if err != nil || r != 5 || g != 50 {
		t.Fatalf("Grow = %d, %d, %v; want 5, 50, nil", r, g, err)
	}
	if w.Window() != 150 {
		t.Fatalf("window %d", w.Window())
	}
	if err := w.OnMessage(64); err != nil { // credit 150-85 = 65
		t.Fatal(err)
	}
	if _, _, err := w.Grow(51); !errors.Is(err, flow.ErrTooLarge) {
		t.Fatalf("Grow above max: %v", err)
	}
	if r, g, err := w.Grow(0); r != 0 || g != 0 || err != nil {
		t.Fatalf("Grow(0) = %d, %d, %v", r, g, err)
	}
	if w.Window() != 150 {
		t.Fatalf("a refused Grow changed the window: %d", w.Window())
	}
	if r, g, err := w.Grow(50); err != nil || r != 0 || g != 50 {
		t.Fatalf("Grow to max = %d, %d, %v", r, g, err)
	}
}

// A message's charge is at most protocol.MaxMessageCharge, the most one
// WindowUpdate returns: one byte more is a violation, whatever the
// credit (a compressed message declaring 2^32-1 bytes ended the server
// when its return did not encode); the largest charge may borrow, and what
// the window then owes (below 2·MaxWindow) is handed back whole.
func TestRecvWindowHugeMessage(t *testing.T) {
	w := flow.NewRecvWindow(maxWindow, maxWindow)
	for _, n := range []uint64{protocol.MaxMessageCharge + 1, 1<<32 - 1, 1<<62 + 1} {
		if err := w.OnMessage(n); !protocol.IsViolation(err) {
			t.Fatalf("a message charged %d bytes: %v", n, err)
		}
	}
	if w.Outstanding() != 0 {
		t.Fatalf("a refused message was charged: %d outstanding", w.Outstanding())
	}
	if err := w.OnMessage(maxWindow - 1); err != nil {
		t.Fatal(err)
	}
	if err := w.OnMessage(protocol.MaxMessageCharge); err != nil {
		t.Fatalf("a borrowing message of MaxMessageCharge bytes: %v", err)
	}
	r, send := w.Drop(maxWindow - 1 + protocol.MaxMessageCharge)
	if !send || r != 2*maxWindow-1 {
		t.Fatalf("Drop of everything = %d, %v", r, send)
	}
}
