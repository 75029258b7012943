package concurrency_test

import (
	"fmt"
	"time"

	"github.com/sluicerpc/sluice/limiters/concurrency"
)

func ExampleNew() {
	var now time.Time // a concurrency limiter ignores the time
	l := concurrency.New(2)

	fmt.Println(l.TryAcquire(now, 1).Granted)
	fmt.Println(l.TryAcquire(now, 1).Granted)
	d := l.TryAcquire(now, 1)
	fmt.Println(d.Granted, d.Hint) // full: retry after a release
	fmt.Println(l.TryAcquire(now, 3).Hint)

	l.Release(now, 1)
	fmt.Println(l.TryAcquire(now, 1).Granted)
	// Output:
	// true
	// true
	// false on-release
	// never
	// true
}

func ExampleLimiter_Resize() {
	var now time.Time
	l := concurrency.New(3)
	for range 3 {
		l.TryAcquire(now, 1)
	}

	// Shrinking keeps all three holders; nobody new enters until fewer
	// than one unit is held.
	l.Resize(1)
	fmt.Printf("%+v\n", l.Snapshot(now))
	for l.Held() > 0 {
		fmt.Println("held", l.Held(), "granted", l.TryAcquire(now, 1).Granted)
		l.Release(now, 1)
	}
	fmt.Println("held", l.Held(), "granted", l.TryAcquire(now, 1).Granted)

	// Growing exposes exactly the new capacity.
	l.Resize(3)
	fmt.Printf("%+v\n", l.Snapshot(now))
	// Output:
	// {Kind:concurrency Limit:1 InUse:3 Available:0}
	// held 3 granted false
	// held 2 granted false
	// held 1 granted false
	// held 0 granted true
	// {Kind:concurrency Limit:3 InUse:1 Available:2}
}
