package flow_test

import (
	"context"
	"errors"
	"testing"

	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/protocol/flow"
)

const maxWindow = 1<<31 - 1

func TestSendWindowFitsUntilExhausted(t *testing.T) {
	w := flow.NewSendWindow(100, maxWindow)
	for _, n := range []uint64{40, 60} {
		if !w.TryReserve(n) {
			t.Fatalf("TryReserve(%d) refused with credit %d", n, w.Credit())
		}
	}
	if w.Credit() != 0 {
		t.Fatalf("credit %d, want 0", w.Credit())
	}
	if w.TryReserve(1) {
		t.Fatal("TryReserve(1) allowed with credit 0")
	}
	if w.Outstanding() != 100 {
		t.Fatalf("outstanding %d, want 100", w.Outstanding())
	}
}

func TestSendWindowBorrowsOnce(t *testing.T) {
	w := flow.NewSendWindow(100, maxWindow)
	if !w.TryReserve(90) {
		t.Fatal("90 refused")
	}
	// Credit 10 > 0: a 50-byte message borrows.
	if !w.TryReserve(50) {
		t.Fatal("borrowing message refused with positive credit")
	}
	if got := w.Credit(); got != -40 {
		t.Fatalf("credit %d, want -40", got)
	}
	// No second borrow, and nothing else either, while the debt is outstanding.
	if w.TryReserve(1) {
		t.Fatal("a second message allowed while a borrow is outstanding")
	}
	if err := w.Update(40, 0); err != nil {
		t.Fatal(err)
	}
	if w.TryReserve(1) {
		t.Fatal("a message allowed at credit 0")
	}
	if err := w.Update(1, 0); err != nil {
		t.Fatal(err)
	}
	// Credit 1: borrows again.
	if !w.TryReserve(1000) {
		t.Fatal("a borrow refused once the credit is back above zero")
	}
}

func TestSendWindowLargerThanWindowBorrows(t *testing.T) {
	w := flow.NewSendWindow(100, maxWindow)
	if !w.TryReserve(1 << 20) {
		t.Fatal("a message larger than the whole window refused on a full credit")
	}
	if w.TryReserve(1) {
		t.Fatal("second message allowed")
	}
}

func TestSendWindowZeroLengthCostsNothing(t *testing.T) {
	w := flow.NewSendWindow(10, maxWindow)
	if !w.TryReserve(20) {
		t.Fatal("borrow refused")
	}
	for range 3 {
		if !w.TryReserve(0) {
			t.Fatal("empty message refused at negative credit")
		}
		if err := w.Reserve(context.Background(), 0); err != nil {
			t.Fatal(err)
		}
	}
	if w.Outstanding() != 20 {
		t.Fatalf("outstanding %d, want 20", w.Outstanding())
	}
	w.Close()
	if err := w.Reserve(context.Background(), 0); !errors.Is(err, flow.ErrClosed) {
		t.Fatalf("Reserve(0) on a closed window: %v", err)
	}
}

func TestSendWindowUpdateViolations(t *testing.T) {
	w := flow.NewSendWindow(100, 200)
	if !w.TryReserve(30) {
		t.Fatal("refused")
	}
	for _, c := range []struct {
		name             string
		returned, growth uint64
	}{
		{"double return", 31, 0},
		{"double return with growth", 31, 1},
		{"neither", 0, 0},
		{"above max", 0, 101},
		{"above max with a return", 1, 101},
		{"huge growth", 0, 1 << 63},
		{"huge return", 1 << 63, 0},
	} {
		err := w.Update(c.returned, c.growth)
		if !protocol.IsViolation(err) {
			t.Errorf("%s: Update(%d, %d) = %v, want a violation", c.name, c.returned, c.growth, err)
		}
	}
	if w.Outstanding() != 30 || w.Window() != 100 {
		t.Fatalf("a refused update changed the window: outstanding %d window %d", w.Outstanding(), w.Window())
	}
	if err := w.Update(30, 100); err != nil {
		t.Fatalf("exact return and growth to max: %v", err)
	}
	if w.Outstanding() != 0 || w.Window() != 200 {
		t.Fatalf("outstanding %d window %d, want 0 and 200", w.Outstanding(), w.Window())
	}
	if err := w.Update(1, 0); !protocol.IsViolation(err) {
		t.Fatalf("return of bytes never sent: %v", err)
	}
}

func TestSendWindowGrowthOpensCredit(t *testing.T) {
	w := flow.NewSendWindow(10, maxWindow)
	if !w.TryReserve(10) || w.TryReserve(1) {
		t.Fatal("unexpected credit")
	}
	if err := w.Update(0, 5); err != nil {
		t.Fatal(err)
	}
	if !w.TryReserve(1) {
		t.Fatal("growth did not open the window")
	}
}

func TestSendWindowTooLarge(t *testing.T) {
	w := flow.NewSendWindow(10, maxWindow)
	for _, n := range []uint64{protocol.MaxMessageCharge + 1, 1<<62 + 1} {
		if err := w.Reserve(context.Background(), n); !errors.Is(err, flow.ErrTooLarge) {
			t.Fatalf("Reserve of %d bytes: %v", n, err)
		}
		if w.TryReserve(n) {
			t.Fatalf("TryReserve of %d bytes", n)
		}
		if err := flow.ReservePair(context.Background(), w, flow.NewSendWindow(10, maxWindow), n); !errors.Is(err, flow.ErrTooLarge) {
			t.Fatalf("ReservePair of %d bytes: %v", n, err)
		}
	}
	if w.Outstanding() != 0 {
		t.Fatal("charged")
	}
}

func TestSendWindowClosedRefuses(t *testing.T) {
	w := flow.NewSendWindow(10, maxWindow)
	w.Close()
	w.Close()
	if w.TryReserve(1) {
		t.Fatal("TryReserve on a closed window")
	}
	if err := w.Reserve(context.Background(), 1); !errors.Is(err, flow.ErrClosed) {
		t.Fatalf("Reserve on a closed window: %v", err)
	}
}

func TestSendWindowSizesValidated(t *testing.T) {
	for _, c := range [][2]uint32{{0, 10}, {11, 10}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("NewSendWindow(%d, %d) did not panic", c[0], c[1])
				}
			}()
			flow.NewSendWindow(c[0], c[1])
		}()
	}
}

func TestPairChargesBothOrNeither(t *testing.T) {
	s := flow.NewSendWindow(100, maxWindow)
	c := flow.NewSendWindow(1000, maxWindow)
	if !flow.TryReservePair(s, c, 150) { // borrows on the stream, fits the connection
		t.Fatal("refused")
	}
	if s.Outstanding() != 150 || c.Outstanding() != 150 {
		t.Fatalf("outstanding %d/%d", s.Outstanding(), c.Outstanding())
	}
	if flow.TryReservePair(s, c, 1) {
		t.Fatal("allowed on an exhausted stream window")
	}
	if s.Outstanding() != 150 || c.Outstanding() != 150 {
		t.Fatalf("a refused pair charged: %d/%d", s.Outstanding(), c.Outstanding())
	}
	s2 := flow.NewSendWindow(100, maxWindow)
	if !flow.TryReservePair(s2, c, 900) { // borrows on both: credits 100 and 850
		t.Fatal("refused")
	}
	if flow.TryReservePair(flow.NewSendWindow(100, maxWindow), c, 1) {
		t.Fatal("allowed on an exhausted connection window")
	}
	if !flow.TryReservePair(s, c, 0) {
		t.Fatal("empty message refused")
	}
	if err := flow.ReservePair(context.Background(), s, c, 0); err != nil {
		t.Fatal(err)
	}
}
