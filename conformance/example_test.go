package conformance_test

import (
	"flag"
	"fmt"
	"sync"
	"time"

	"github.com/sluicerpc/sluice/conformance"
	"github.com/sluicerpc/sluice/spi"
)

// slotsKind is the kind under test: at most "slots" holders at once.
type slotsKind struct{}

func (slotsKind) Name() string     { return "example.com/slots" }
func (slotsKind) Class() spi.Class { return spi.ClassConcurrency }

func (slotsKind) Validate(p spi.Params) error {
	for name := range p {
		if name != "slots" {
			return spi.InvalidParam(name, "unknown parameter")
		}
	}
	if n, ok := p.Int("slots"); !ok || n < 1 {
		return spi.InvalidParam("slots", "required, at least 1")
	}
	return nil
}

func (k slotsKind) New(p spi.Params, _ time.Time) (spi.Limiter, error) {
	if err := k.Validate(p); err != nil {
		return nil, err
	}
	return &slots{limit: p["slots"]}, nil
}

type slots struct {
	mu          sync.Mutex
	limit, held int64
}

func (s *slots) TryAcquire(_ time.Time, n int64) spi.Decision {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case n > s.limit:
		return spi.RefuseNever()
	case s.held+n > s.limit:
		return spi.RefuseUntilRelease()
	}
	s.held += n
	return spi.Grant()
}

func (s *slots) Release(_ time.Time, n int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n > s.held {
		panic(fmt.Sprintf("slots: released %d but only %d are held", n, s.held))
	}
	s.held -= n
}

func (s *slots) Cancel(now time.Time, n int64) { s.Release(now, n) }

func (s *slots) Reconfigure(_ time.Time, p spi.Params) error {
	if err := (slotsKind{}).Validate(p); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.limit = p["slots"]
	return nil
}

func (s *slots) Snapshot(time.Time) spi.Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	return spi.Snapshot{Kind: "example.com/slots", Limit: s.limit, InUse: s.held, Available: max(0, s.limit-s.held)}
}

// CheckLimiter vets a kind outside go test, as "sluice conformance" does
// with a kind it loaded from a plugin binary; in a test, RunLimiterTests
// runs the same checks as subtests. It prints "passed: true" for this kind;
// the example has no Output because the checks take seconds (property-based,
// longer under -race), too long for every go test run.
func ExampleCheckLimiter() {
	_ = flag.Set("rapid.nofailfile", "true") // a failed property writes no testdata/rapid file
	kind := slotsKind{}
	caps := conformance.LimiterCapabilities{
		Class:            spi.ClassConcurrency,
		Params:           func(limit int64) spi.Params { return spi.Params{"slots": limit} },
		ReconfigureLimit: true,
	}
	report := conformance.CheckLimiter(kind.Name(), func() (conformance.LimiterHarness, error) {
		return conformance.HarnessOf(kind, caps), nil
	})
	for _, c := range report.Checks {
		if c.Outcome != conformance.Passed {
			fmt.Println(c.Name, c.Outcome)
		}
	}
	fmt.Println("passed:", report.Passed())
}
