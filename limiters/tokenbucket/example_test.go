package tokenbucket_test

import (
	"fmt"
	"time"

	"golang.org/x/time/rate"

	"github.com/sluicerpc/sluice/limiters/tokenbucket"
	"github.com/sluicerpc/sluice/spi"
)

func ExampleNew() {
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	// 3 tokens at most; 1 more at every 100 ms boundary after start.
	l, err := tokenbucket.New(tokenbucket.Options{TokenLimit: 3, TokensPerPeriod: 1, Period: 100 * time.Millisecond}, start)
	if err != nil {
		panic(err)
	}
	at := func(ms int) time.Time { return start.Add(time.Duration(ms) * time.Millisecond) }

	fmt.Println(l.TryAcquire(at(0), 3).Granted) // starts full
	d := l.TryAcquire(at(30), 1)
	fmt.Println(d.Granted, d.Hint, d.RetryAt.Sub(start)) // the exact instant a retry succeeds
	fmt.Println(l.TryAcquire(d.RetryAt, 1).Granted)
	fmt.Println(l.TryAcquire(at(100), 4).Hint) // more than the capacity
	// Output:
	// true
	// false at 100ms
	// true
	// never
}

func ExampleLimiter_Update() {
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return start.Add(time.Duration(ms) * time.Millisecond) }
	l, _ := tokenbucket.New(tokenbucket.Options{TokenLimit: 10, TokensPerPeriod: 1, Period: time.Second}, start)
	l.TryAcquire(at(0), 7)

	// Raising the capacity does not refill: 3 tokens are left, not 13.
	_ = l.Update(at(0), tokenbucket.Options{TokenLimit: 20, TokensPerPeriod: 1, Period: time.Second})
	fmt.Printf("%+v\n", l.Snapshot(at(0)))

	// A new cadence published at 0.9 s grants nothing at publication: the
	// first 100 ms period starts then.
	l.TryAcquire(at(900), 3)
	_ = l.Update(at(900), tokenbucket.Options{TokenLimit: 20, TokensPerPeriod: 1, Period: 100 * time.Millisecond})
	d := l.TryAcquire(at(900), 1)
	fmt.Println(d.Hint, d.RetryAt.Sub(start))
	// Output:
	// {Kind:tokenbucket Limit:20 InUse:17 Available:3}
	// at 1s
}

func ExampleLimiter_Seal() {
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	old, _ := tokenbucket.New(tokenbucket.Options{TokenLimit: 10, TokensPerPeriod: 1, Period: 100 * time.Millisecond}, start)
	old.TryAcquire(start, 7)

	// An algorithm replacement: the old limiter hands its usage over...
	usage := old.Seal(start)
	for _, u := range usage {
		fmt.Println(u.Units, "units until", u.Until.Sub(start))
	}
	fmt.Println(old.TryAcquire(start, 1).Hint)

	// ...and its successor (any spi.Inheritor) takes it over.
	var next spi.Limiter
	next, _ = tokenbucket.New(tokenbucket.Options{TokenLimit: 10, TokensPerPeriod: 10, Period: time.Second, Continuous: true}, start)
	next.(spi.Inheritor).Inherit(start, usage)
	fmt.Printf("%+v\n", next.Snapshot(start))
	// Output:
	// 7 units until 700ms
	// never
	// {Kind:tokenbucket Limit:10 InUse:7 Available:3}
}

func ExampleLimiter_xTimeRate() {
	// A continuous bucket is x/time/rate's Limiter with an exact clock:
	// 10 per second with a burst of 3.
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	ours, _ := tokenbucket.New(tokenbucket.Options{TokenLimit: 3, TokensPerPeriod: 10, Period: time.Second, Continuous: true}, start)
	theirs := rate.NewLimiter(rate.Every(100*time.Millisecond), 3)
	for _, ms := range []int{0, 0, 0, 0, 50, 100, 150, 400} {
		now := start.Add(time.Duration(ms) * time.Millisecond)
		fmt.Println(ms, theirs.AllowN(now, 1), ours.TryAcquire(now, 1).Granted)
	}
	// Output:
	// 0 true true
	// 0 true true
	// 0 true true
	// 0 false false
	// 50 false false
	// 100 true true
	// 150 false false
	// 400 true true
}
