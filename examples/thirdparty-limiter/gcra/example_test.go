package gcra_test

import (
	"fmt"
	"time"

	"github.com/sluicerpc/sluice/examples/thirdparty-limiter/gcra"
	"github.com/sluicerpc/sluice/spi"
)

// A program that links the kind registers it; a spec then names it like
// any built-in kind. Here: a burst of 2, then one unit every 100ms.
func Example() {
	reg := &spi.Registry{}
	if err := reg.Register(gcra.Kind{}); err != nil {
		panic(err)
	}
	spec := spi.Spec{Kind: gcra.Name, Params: gcra.Params(2, 100*time.Millisecond)}
	kind, err := reg.Validate(spec)
	if err != nil {
		panic(err)
	}
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	l, _ := kind.New(spec.Params, start)
	at := func(ms int) time.Time { return start.Add(time.Duration(ms) * time.Millisecond) }

	fmt.Println(l.TryAcquire(at(0), 1).Granted, l.TryAcquire(at(0), 1).Granted)
	d := l.TryAcquire(at(10), 1)
	fmt.Println(d.Granted, d.Hint, d.RetryAt.Sub(start)) // the instant a retry succeeds
	fmt.Println(l.TryAcquire(d.RetryAt, 1).Granted)
	fmt.Println(l.TryAcquire(at(200), 3).Hint) // more than the burst
	fmt.Printf("%+v\n", l.Snapshot(at(400)))

	_, err = reg.Validate(spi.Spec{Kind: gcra.Name, Params: gcra.Params(0, time.Second)})
	fmt.Println(err)
	// Output:
	// true true
	// false at 100ms
	// true
	// never
	// {Kind:example.com/gcra Limit:2 InUse:0 Available:2}
	// burst: must be in [1, 1048576], got 0
}
