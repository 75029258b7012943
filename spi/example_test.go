package spi_test

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/sluicerpc/sluice/spi"
)

// slotsKind is a third-party limiter kind: at most "slots" holders at once.
type slotsKind struct{}

func (slotsKind) Name() string     { return "example.com/slots" }
func (slotsKind) Class() spi.Class { return spi.ClassConcurrency }

func (slotsKind) Validate(p spi.Params) error {
	for _, name := range slices.Sorted(maps.Keys(p)) {
		if name != "slots" {
			return spi.InvalidParam(name, "unknown parameter")
		}
	}
	n, ok := p.Int("slots")
	if !ok {
		return spi.InvalidParam("slots", "required")
	}
	if n < 1 {
		return spi.InvalidParam("slots", "must be at least 1, got %d", n)
	}
	return nil
}

func (k slotsKind) New(p spi.Params, _ time.Time) (spi.Limiter, error) {
	if err := k.Validate(p); err != nil {
		return nil, err
	}
	return &slots{limit: p["slots"]}, nil
}

// slots is the limiter built by slotsKind. A mutex is enough for an example.
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
	case n > s.limit-s.held:
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

// Example registers a custom limiter kind in a private Registry, validates
// specs against it, and builds a limiter from a valid spec.
func Example() {
	reg := &spi.Registry{} // the zero Registry is ready to use
	if err := reg.Register(slotsKind{}); err != nil {
		fmt.Println("register:", err)
		return
	}
	fmt.Println("kinds:", reg.Names())

	// Registering the same name again is refused.
	err := reg.Register(slotsKind{})
	fmt.Println("duplicate:", errors.Is(err, spi.ErrDuplicateKind))

	// A valid spec: Validate returns the kind, which builds the limiter.
	spec := spi.Spec{Kind: "example.com/slots", Params: spi.Params{"slots": 2}}
	kind, err := reg.Validate(spec)
	if err != nil {
		fmt.Println("validate:", err)
		return
	}
	fmt.Println("valid:", spec, kind.Class())
	lim, _ := kind.New(spec.Params, time.Time{})
	fmt.Println(lim.TryAcquire(time.Time{}, 1).Granted, lim.TryAcquire(time.Time{}, 1).Granted, lim.TryAcquire(time.Time{}, 1).Hint)

	// An invalid parameter comes back as a *spi.ParamError naming it.
	_, err = reg.Validate(spi.Spec{Kind: "example.com/slots", Params: spi.Params{"slots": 0}})
	var pe *spi.ParamError
	if errors.As(err, &pe) {
		fmt.Printf("invalid: param=%s reason=%q\n", pe.Param, pe.Reason)
	}

	// A kind that is not registered wraps spi.ErrUnknownKind.
	_, err = reg.Validate(spi.Spec{Kind: "slots", Params: spi.Params{"slots": 2}})
	fmt.Println("unknown:", errors.Is(err, spi.ErrUnknownKind), err)

	// Output:
	// kinds: [example.com/slots]
	// duplicate: true
	// valid: example.com/slots{slots=2} concurrency
	// true true on-release
	// invalid: param=slots reason="must be at least 1, got 0"
	// unknown: true spi: unknown limiter kind "slots"
}
