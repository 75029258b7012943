package window_test

import (
	"fmt"
	"time"

	"github.com/sluicerpc/sluice/limiters/window"
	"github.com/sluicerpc/sluice/spi"
)

func ExampleNewFixed() {
	origin := time.Date(2030, time.January, 1, 0, 0, 0, 0, time.UTC)
	l := window.NewFixed(2, time.Second, origin) // 2 per second, windows aligned to origin

	at := func(d time.Duration) time.Time { return origin.Add(d) }
	fmt.Println(l.TryAcquire(at(100*time.Millisecond), 2).Granted)
	d := l.TryAcquire(at(300*time.Millisecond), 1)
	fmt.Println(d.Granted, d.Hint, d.RetryAt.Sub(origin)) // the exact instant it will fit
	fmt.Println(l.TryAcquire(at(300*time.Millisecond), 3).Hint)
	fmt.Println(l.TryAcquire(at(time.Second), 1).Granted)
	// Output:
	// true
	// false at 1s
	// never
	// true
}

func ExampleNewSliding() {
	origin := time.Date(2030, time.January, 1, 0, 0, 0, 0, time.UTC)
	l := window.NewSliding(4, time.Second, 4, origin) // 4 per second, in segments of 250ms

	at := func(d time.Duration) time.Time { return origin.Add(d) }
	l.TryAcquire(at(0), 1)                    // counts until 1s
	l.TryAcquire(at(600*time.Millisecond), 3) // segment [500ms, 750ms): counts until 1.5s
	for _, n := range []int64{1, 2} {
		d := l.TryAcquire(at(700*time.Millisecond), n)
		fmt.Println(n, d.Granted, d.RetryAt.Sub(origin))
	}
	fmt.Printf("%+v\n", l.Snapshot(at(time.Second)))
	// Output:
	// 1 false 1s
	// 2 false 1.5s
	// {Kind:slidingwindow Limit:4 InUse:3 Available:1}
}

func ExampleFixed_Reconfigure() {
	origin := time.Date(2030, time.January, 1, 0, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return origin.Add(d) }
	l := window.NewFixed(10, time.Second, origin)
	l.TryAcquire(at(400*time.Millisecond), 7)

	// Raising the limit opens no new window: exactly 13 more until 1s.
	_ = l.Reconfigure(at(400*time.Millisecond), window.FixedSpec(20, time.Second).Params)
	fmt.Printf("%+v\n", l.Snapshot(at(400*time.Millisecond)))

	// A longer window keeps the window's units as a barrier until
	// max(1s, 0.4s + 10s).
	_ = l.Reconfigure(at(400*time.Millisecond), window.FixedSpec(20, 10*time.Second).Params)
	fmt.Println(l.Seal(at(500 * time.Millisecond))[0].Until.Sub(origin))
	// Output:
	// {Kind:fixedwindow Limit:20 InUse:7 Available:13}
	// 10.4s
}

func ExampleSliding_Inherit() {
	origin := time.Date(2030, time.January, 1, 0, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return origin.Add(d) }

	// Replace a fixed window by a sliding window: the old usage counts in
	// the new algorithm until the later of its own expiry and the new
	// window's horizon.
	old := window.NewFixed(10, time.Second, origin)
	old.TryAcquire(at(200*time.Millisecond), 7)
	next := window.NewSliding(10, 2*time.Second, 4, at(400*time.Millisecond))
	next.Inherit(at(400*time.Millisecond), old.Seal(at(400*time.Millisecond)))

	fmt.Println(old.TryAcquire(at(400*time.Millisecond), 1).Hint) // sealed: go to the successor
	fmt.Printf("%+v\n", next.Snapshot(at(400*time.Millisecond)))
	d := next.TryAcquire(at(400*time.Millisecond), 4)
	fmt.Println(d.Granted, d.RetryAt.Sub(origin))
	var _ spi.Handover = old
	// Output:
	// never
	// {Kind:slidingwindow Limit:10 InUse:7 Available:3}
	// false 2.4s
}
