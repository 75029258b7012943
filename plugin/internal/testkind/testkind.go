// Package testkind is a small concurrency limiter kind used to test the
// plug-in bridge without depending on the limiters modules.
package testkind

import (
	"fmt"
	"sync"
	"time"

	"github.com/sluicerpc/sluice/conformance/capabilities"
	"github.com/sluicerpc/sluice/spi"
)

// Name is the kind's registry name.
const Name = "plugintest.concurrency"

// ParamLimit is the concurrency limit parameter.
const ParamLimit = "limit"

// MaxLimit is the largest accepted limit.
const MaxLimit = 1 << 30

// Kind is a concurrency limit: at most "limit" units held at once.
type Kind struct{}

var _ spi.LimiterKind = Kind{}

// Name returns Name.
func (Kind) Name() string { return Name }

// Class returns spi.ClassConcurrency.
func (Kind) Class() spi.Class { return spi.ClassConcurrency }

// Validate accepts exactly one parameter, "limit", in [1, MaxLimit].
func (Kind) Validate(p spi.Params) error {
	_, err := limitOf(p)
	return err
}

// New builds a limiter from p.
func (Kind) New(p spi.Params, _ time.Time) (spi.Limiter, error) {
	limit, err := limitOf(p)
	if err != nil {
		return nil, err
	}
	return &limiter{limit: limit}, nil
}

// Params returns the parameters of a limit.
func Params(limit int64) spi.Params { return spi.Params{ParamLimit: limit} }

func limitOf(p spi.Params) (int64, error) {
	for name := range p {
		if name != ParamLimit {
			return 0, spi.InvalidParam(name, "unknown parameter for kind %q", Name)
		}
	}
	limit, ok := p.Int(ParamLimit)
	if !ok {
		return 0, spi.InvalidParam(ParamLimit, "required")
	}
	if limit < 1 || limit > MaxLimit {
		return 0, spi.InvalidParam(ParamLimit, "must be between 1 and %d, got %d", MaxLimit, limit)
	}
	return limit, nil
}

type limiter struct {
	mu    sync.Mutex
	limit int64
	held  int64
}

func (l *limiter) TryAcquire(_ time.Time, n int64) spi.Decision {
	if n < 0 {
		panic(fmt.Sprintf("testkind: acquire of negative units %d", n))
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case n == 0:
		return spi.Grant()
	case n > l.limit:
		return spi.RefuseNever()
	case n > l.limit-l.held:
		return spi.RefuseUntilRelease()
	}
	l.held += n
	return spi.Grant()
}

func (l *limiter) Release(_ time.Time, n int64) {
	if n < 0 {
		panic(fmt.Sprintf("testkind: release of negative units %d", n))
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if n > l.held {
		panic(fmt.Sprintf("testkind: released %d units but only %d are held", n, l.held))
	}
	l.held -= n
}

func (l *limiter) Cancel(now time.Time, n int64) { l.Release(now, n) }

func (l *limiter) Reconfigure(_ time.Time, p spi.Params) error {
	limit, err := limitOf(p)
	if err != nil {
		return err
	}
	l.mu.Lock()
	l.limit = limit
	l.mu.Unlock()
	return nil
}

func (l *limiter) Snapshot(time.Time) spi.Snapshot {
	l.mu.Lock()
	defer l.mu.Unlock()
	return spi.Snapshot{Kind: Name, Limit: l.limit, InUse: l.held, Available: max(0, l.limit-l.held)}
}

// Capabilities describes Kind to the conformance suite.
func Capabilities() capabilities.Limiter {
	return capabilities.Limiter{
		Class:            spi.ClassConcurrency,
		Params:           Params,
		ReconfigureLimit: true,
	}
}
