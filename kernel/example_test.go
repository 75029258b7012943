package kernel_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sluicerpc/sluice/kernel"
	"github.com/sluicerpc/sluice/limiters/concurrency"
	"github.com/sluicerpc/sluice/spi"
)

// A server builds one kernel over its catalog, enables admission, and runs
// every request through Capture, Admit and Release.
func Example() {
	var cat kernel.CatalogBuilder
	say := cat.MustAdd("echo", "Say")
	k, _ := kernel.New(kernel.Config{Catalog: cat.Build()})

	_, _ = k.Enable(kernel.Options{
		Global: kernel.Rule{Limits: []spi.Spec{concurrency.Spec(1)}},
	})

	handle := func() error {
		var p kernel.Permit // lives in the per-call state in a real server
		if k.Capture(&p) {  // false when admission is disabled
			if err := p.Admit(context.Background(), kernel.Request{Method: say}); err != nil {
				return err
			}
			defer p.Release()
		}
		return nil // ... the handler runs here ...
	}
	fmt.Println(handle())

	var held kernel.Permit
	k.Capture(&held)
	_ = held.Admit(context.Background(), kernel.Request{Method: say})
	err := handle()
	reason, _ := kernel.ReasonOf(err)
	fmt.Println(reason, held.Granted())
	held.Release()
	// Output:
	// <nil>
	// concurrency true
}

// Update takes a complete candidate and the generation it was derived
// from. A shrink below the held count keeps every holder and admits nobody
// until the count is below the new limit.
func ExampleKernel_Update() {
	var cat kernel.CatalogBuilder
	say := cat.MustAdd("echo", "Say")
	k, _ := kernel.New(kernel.Config{Catalog: cat.Build()})
	limit := func(n int64) kernel.Options {
		return kernel.Options{Global: kernel.Rule{Limits: []spi.Spec{concurrency.Spec(n)}}}
	}
	gen, _ := k.Enable(limit(3))
	held := make([]*kernel.Permit, 3)
	for i := range held {
		held[i] = new(kernel.Permit)
		k.Capture(held[i])
		_ = held[i].Admit(context.Background(), kernel.Request{Method: say})
	}

	gen, err := k.Update(gen, limit(1))
	fmt.Println("update:", gen, err)
	_, err = k.Update(gen-1, limit(10)) // derived from a stale generation
	fmt.Println("stale:", kernel.OutcomeOf(err))

	try := func() string {
		var p kernel.Permit
		k.Capture(&p)
		if err := p.Admit(context.Background(), kernel.Request{Method: say}); err != nil {
			return "refused"
		}
		p.Release()
		return "granted"
	}
	for _, p := range held {
		fmt.Println(try())
		p.Release()
	}
	fmt.Println(try())
	// Output:
	// update: 2 <nil>
	// stale: publication_conflict
	// refused
	// refused
	// refused
	// granted
}

// A request that cannot be admitted at once waits in the kernel's queue
// when its program allows it, and is granted when a holder releases.
func ExamplePermit_Admit_queued() {
	var cat kernel.CatalogBuilder
	say := cat.MustAdd("echo", "Say")
	k, _ := kernel.New(kernel.Config{Catalog: cat.Build()})
	_, _ = k.Enable(kernel.Options{
		Global: kernel.Rule{Limits: []spi.Spec{concurrency.Spec(1)}},
		Queue:  kernel.QueuePolicy{MaxQueuedCalls: 10, MaxQueuedBytes: 1 << 20, MaxQueueDelay: time.Minute},
	})
	var holder kernel.Permit
	k.Capture(&holder)
	_ = holder.Admit(context.Background(), kernel.Request{Method: say})

	done := make(chan error)
	go func() {
		var p kernel.Permit
		k.Capture(&p)
		err := p.Admit(context.Background(), kernel.Request{Method: say, Bytes: 512})
		p.Release()
		done <- err
	}()
	for k.Stats().QueuedCalls == 0 {
		time.Sleep(time.Millisecond)
	}
	fmt.Println("queued bytes:", k.Stats().QueuedBytes)
	holder.Release()
	fmt.Println("waiter:", <-done)
	// Output:
	// queued bytes: 512
	// waiter: <nil>
}

// Seal ends queued waiters, refuses new requests, and Drain waits for the
// permits that are still held.
func ExampleKernel_Seal() {
	var cat kernel.CatalogBuilder
	say := cat.MustAdd("echo", "Say")
	k, _ := kernel.New(kernel.Config{Catalog: cat.Build()})
	_, _ = k.Enable(kernel.Options{Global: kernel.Rule{Limits: []spi.Spec{concurrency.Spec(5)}}})
	var active kernel.Permit
	k.Capture(&active)
	_ = active.Admit(context.Background(), kernel.Request{Method: say})

	k.Seal()
	var late kernel.Permit
	k.Capture(&late)
	err := late.Admit(context.Background(), kernel.Request{Method: say})
	fmt.Println(errors.Is(err, kernel.ErrUnavailable))

	go active.Release() // the active call finishes
	fmt.Println(k.Drain(context.Background()))
	// Output:
	// true
	// <nil>
}

// The generation cell pairs each reader with the value it captured, and
// runs a retired value's drain callback once its last reader is done.
func ExampleCell() {
	var c kernel.Cell[string]
	c.Publish("policy-1", 1, func(v string) { fmt.Println("drained", v) })
	lease, _ := c.Acquire(0)
	c.Publish("policy-2", 2, nil) // policy-1 is retired, still leased
	fmt.Println("in use:", lease.Value())
	lease.Release()
	// Output:
	// in use: policy-1
	// drained policy-1
}
