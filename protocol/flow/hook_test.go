package flow

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
)

// TestGrantRacingGiveUp: a waiter granted after it decided to give up (its
// context cancelled, its window or its stream closed) gives the grant back
// and the credit goes to the next waiter; nothing stays charged for it.
func TestGrantRacingGiveUp(t *testing.T) {
	for _, c := range []string{"cancel", "close stream"} {
		t.Run(c, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := NewSendWindow(100, 1<<31-1)
				w := NewSendWindow(10, 1<<31-1)
				w.TryReserve(10)
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				a := make(chan error, 1)
				go func() { a <- ReservePair(ctx, s, w, 5) }()
				synctest.Wait()
				b := make(chan error, 1)
				go func() { b <- w.Reserve(context.Background(), 7) }()
				synctest.Wait()

				testHookGivingUp = func() {
					if err := w.Update(1, 0); err != nil { // credit 1: grants a, which gave up
						t.Error(err)
					}
				}
				defer func() { testHookGivingUp = nil }()
				if c == "cancel" {
					cancel()
				} else {
					s.Close()
				}
				synctest.Wait()
				testHookGivingUp = nil

				want := context.Canceled
				if c != "cancel" {
					want = ErrClosed
				}
				if err := <-a; !errors.Is(err, want) {
					t.Fatalf("a: %v, want %v", err, want)
				}
				select {
				case err := <-b:
					if err != nil {
						t.Fatal(err)
					}
				default:
					t.Fatal("the credit a gave back was not passed on to b")
				}
				if got := w.Outstanding(); got != 16 {
					t.Fatalf("connection outstanding %d, want 16 (9 sent + b's 7)", got)
				}
				if s.Outstanding() != 0 || s.held != 0 || w.held != 0 {
					t.Fatalf("stream outstanding %d, held %d/%d", s.Outstanding(), s.held, w.held)
				}
			})
		})
	}
}
