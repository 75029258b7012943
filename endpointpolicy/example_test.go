package endpointpolicy_test

import (
	"fmt"
	"time"

	"github.com/sluicerpc/sluice/endpointpolicy"
	"github.com/sluicerpc/sluice/spi"
)

func ExampleCircuitBreaker() {
	clk := newFakeClock()
	b, err := endpointpolicy.NewCircuitBreaker(endpointpolicy.CircuitBreakerOptions{
		MinimumThroughput: 3,
		BreakDuration:     5 * time.Second,
		Clock:             clk,
	})
	if err != nil {
		panic(err)
	}
	for range 3 {
		d := b.TryAcquire("10.0.0.1:443", "echo/Echo")
		b.Report(spi.AttemptOutcome{Kind: spi.OutcomeConnectionClosed}, d.Token)
	}
	fmt.Println(b.State("10.0.0.1:443"), b.TryAcquire("10.0.0.1:443", "echo/Echo").RetryAfter)

	clk.Advance(5 * time.Second)
	probe := b.TryAcquire("10.0.0.1:443", "echo/Echo")
	fmt.Println(probe.Allowed, b.State("10.0.0.1:443"))
	b.Report(spi.AttemptOutcome{Kind: spi.OutcomeSuccess}, probe.Token)
	fmt.Println(b.State("10.0.0.1:443"))
	// Output:
	// open 5s
	// true half_open
	// closed
}

func ExampleAdaptiveThrottle() {
	th, err := endpointpolicy.NewAdaptiveThrottle(endpointpolicy.AdaptiveThrottleOptions{
		K:     2,
		Clock: newFakeClock(),
		Rand:  func() float64 { return 0.5 },
	})
	if err != nil {
		panic(err)
	}
	overloaded := spi.AttemptOutcome{Kind: spi.OutcomeRemoteError, Code: 8, ResponseObserved: true}
	for range 4 {
		d := th.TryAcquire("10.0.0.1:443", "echo/Echo")
		th.Report(overloaded, d.Token)
	}
	s := th.Stats("10.0.0.1:443")
	fmt.Printf("requests %d, accepts %d, reject probability %.1f\n", s.Requests, s.Accepts, s.RejectProbability)
	fmt.Println(th.TryAcquire("10.0.0.1:443", "echo/Echo").Allowed)
	// Output:
	// requests 4, accepts 0, reject probability 0.8
	// false
}

func ExampleEndpointConcurrency() {
	c, err := endpointpolicy.NewEndpointConcurrency(1)
	if err != nil {
		panic(err)
	}
	d := c.TryAcquire("10.0.0.1:443", "echo/Echo")
	fmt.Println(d.Allowed, c.TryAcquire("10.0.0.1:443", "echo/Echo").Allowed)
	c.Report(spi.AttemptOutcome{Kind: spi.OutcomeSuccess}, d.Token)
	c.Report(spi.AttemptOutcome{Kind: spi.OutcomeSuccess}, d.Token) // ignored
	fmt.Println(c.InFlight("10.0.0.1:443"))
	// Output:
	// true false
	// 0
}
