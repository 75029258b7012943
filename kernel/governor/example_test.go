package governor_test

import (
	"context"
	"fmt"
	"time"

	"github.com/sluicerpc/sluice/kernel/governor"
)

// A server holds one Governor and one Holding per request: the request
// reserves its call, takes a decode credit and the bytes its decode pays
// for, gives the credit back when the decode ends, and Release returns the
// rest exactly once.
func ExampleNew() {
	g, err := governor.New(governor.Limits{Decodes: 1, RetainedBytes: 4096, DecodedBytes: 1 << 20})
	if err != nil {
		panic(err)
	}
	perServer := governor.NewCallCapacity(64)
	conns := governor.NewConnCapacities(8)
	conn := conns.Open() // when a connection is accepted
	defer conns.Close(conn)

	var h governor.Holding // lives in the server's per-call state
	if ok, level := h.Call.Reserve(conn, perServer); !ok {
		fmt.Println("refused at the", level, "level")
		return
	}
	fmt.Println(h.Take(g, governor.PartRetained, 1000), h.Take(g, governor.PartDecode, 1))

	var other governor.Holding
	fmt.Println("second decode:", other.Take(g, governor.PartDecode, 1)) // one decode at a time

	fmt.Println(h.Take(g, governor.PartDecoded, 8000))
	h.Give(governor.PartDecode, 1) // the decode ended
	fmt.Println(h.Call.Activate()) // the handler starts
	fmt.Printf("%+v\n", g.Snapshot())

	fmt.Println(h.Release()) // the call ended: everything goes back
	fmt.Printf("%+v\n", g.Snapshot().Decoded)
	// Output:
	// true true
	// second decode: false
	// true
	// true
	// {Decodes:{Used:0 Limit:1} Retained:{Used:1000 Limit:4096} Decoded:{Used:8000 Limit:1048576} Stream:{Used:0 Limit:67108864}}
	// true
	// {Used:0 Limit:1048576}
}

// Call capacity has two levels; a Call reserves on both or on neither, and
// the refusal names the level that was full. Lowering a capacity revokes
// nothing.
func ExampleCall_Reserve() {
	perServer := governor.NewCallCapacity(2)
	conns := governor.NewConnCapacities(1)
	a, b, c := conns.Open(), conns.Open(), conns.Open()
	defer conns.Close(a)
	defer conns.Close(b)
	defer conns.Close(c)

	var c1, c2, c3 governor.Call
	fmt.Println(c1.Reserve(a, perServer))
	fmt.Println(c2.Reserve(a, perServer)) // connection a is full
	fmt.Println(c2.Reserve(b, perServer))
	fmt.Println(c3.Reserve(c, perServer)) // the server is full

	perServer.SetCapacity(1) // a shrink: both calls keep their slots
	c1.Activate()
	fmt.Printf("%+v\n", perServer.Snapshot())
	c1.Release()
	c2.Release()
	fmt.Printf("%+v\n", perServer.Snapshot())
	// Output:
	// true none
	// false connection
	// true none
	// false server
	// {Capacity:1 Active:1 Reserved:1}
	// {Capacity:1 Active:0 Reserved:0}
}

// Acquire waits for units in arrival order; a Release hands them to the
// oldest waiter that fits.
func ExampleBudget_Acquire() {
	b := governor.NewBudget("decodes", 1)
	fmt.Println(b.TryAcquire(1))

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := make(chan error)
	go func() { done <- b.Acquire(ctx, 1) }()
	// A caller that must not wait uses TryAcquire; it fails while the
	// unit is held.
	fmt.Println(b.TryAcquire(1))
	b.Release(1)
	fmt.Println(<-done, b.Snapshot())
	b.Release(1)
	// Output:
	// true
	// false
	// <nil> {1 1}
}
