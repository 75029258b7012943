package flow_test

import (
	"context"
	"testing"

	"github.com/sluicerpc/sluice/protocol/flow"
)

// The steady-state path, a message sent with credit available and received
// and consumed, allocates nothing.
func TestSteadyStateDoesNotAllocate(t *testing.T) {
	ctx := context.Background()
	s := flow.NewSendWindow(64<<10, maxWindow)
	c := flow.NewSendWindow(1<<20, maxWindow)
	rs := flow.NewRecvWindow(64<<10, maxWindow)
	rc := flow.NewRecvWindow(1<<20, maxWindow)
	for name, f := range map[string]func(){
		"Reserve+Update": func() {
			if err := s.Reserve(ctx, 1024); err != nil {
				t.Fatal(err)
			}
			if err := s.Update(1024, 0); err != nil {
				t.Fatal(err)
			}
		},
		"ReservePair+Update": func() {
			if err := flow.ReservePair(ctx, s, c, 1024); err != nil {
				t.Fatal(err)
			}
			if err := s.Update(1024, 0); err != nil {
				t.Fatal(err)
			}
			if err := c.Update(1024, 0); err != nil {
				t.Fatal(err)
			}
		},
		"OnMessage+Consume": func() {
			if err := rs.OnMessage(1024); err != nil {
				t.Fatal(err)
			}
			if err := rc.OnMessage(1024); err != nil {
				t.Fatal(err)
			}
			rs.Consume(1024)
			rc.Consume(1024)
		},
	} {
		if a := testing.AllocsPerRun(1000, f); a != 0 {
			t.Errorf("%s: %v allocations per message, want 0", name, a)
		}
	}
}
