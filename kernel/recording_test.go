package kernel_test

import (
	"errors"
	"sync"
	"time"

	"github.com/sluicerpc/sluice/limiters/concurrency"
	"github.com/sluicerpc/sluice/spi"
)

// recordingKind is a concurrency kind whose limiters record every
// Reconfigure, and refuse the limit failLimit at commit time (after
// Validate accepted it), to test rollback.
type recordingKind struct {
	name      string
	failLimit int64
	mu        sync.Mutex
	history   []int64 // every committed limit, in order
}

func (r *recordingKind) Name() string     { return r.name }
func (r *recordingKind) Class() spi.Class { return spi.ClassConcurrency }
func (r *recordingKind) Validate(p spi.Params) error {
	return concurrency.Kind{}.Validate(p)
}
func (r *recordingKind) New(p spi.Params, now time.Time) (spi.Limiter, error) {
	l, err := concurrency.Kind{}.New(p, now)
	if err != nil {
		return nil, err
	}
	return &recordingLimiter{Limiter: l.(*concurrency.Limiter), kind: r}, nil
}

func (r *recordingKind) spec(limit int64) spi.Spec {
	return spi.Spec{Kind: r.name, Params: spi.Params{concurrency.ParamLimit: limit}}
}

func (r *recordingKind) commits() []int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]int64(nil), r.history...)
}

type recordingLimiter struct {
	*concurrency.Limiter
	kind *recordingKind
}

func (l *recordingLimiter) Reconfigure(now time.Time, p spi.Params) error {
	if p[concurrency.ParamLimit] == l.kind.failLimit {
		return errors.New("injected commit failure")
	}
	if err := l.Limiter.Reconfigure(now, p); err != nil {
		return err
	}
	l.kind.mu.Lock()
	l.kind.history = append(l.kind.history, p[concurrency.ParamLimit])
	l.kind.mu.Unlock()
	return nil
}
