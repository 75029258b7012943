package kernel_test

import (
	"sync"
	"time"

	"github.com/sluicerpc/sluice/spi"
)

// quotaKind is a deterministic rate kind for lineage tests: a quota of
// "limit" units that never refills, which hands over and inherits its
// usage. Two names make an "algorithm replacement" between them.
type quotaKind struct{ name string }

func (q quotaKind) Name() string     { return q.name }
func (q quotaKind) Class() spi.Class { return spi.ClassRate }
func (q quotaKind) Validate(p spi.Params) error {
	if v, ok := p["limit"]; !ok || v < 1 || len(p) != 1 {
		return spi.InvalidParam("limit", "required, at least 1, and alone")
	}
	return nil
}
func (q quotaKind) New(p spi.Params, _ time.Time) (spi.Limiter, error) {
	return &quota{kind: q.name, limit: p["limit"]}, nil
}

func quotaSpec(kind string, limit int64) spi.Spec {
	return spi.Spec{Kind: kind, Params: spi.Params{"limit": limit}}
}

var farRetry = time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)

type quota struct {
	mu        sync.Mutex
	kind      string
	limit     int64
	used      int64
	inherited int64
	sealed    bool
}

func (q *quota) TryAcquire(_ time.Time, n int64) spi.Decision {
	q.mu.Lock()
	defer q.mu.Unlock()
	switch {
	case q.sealed || n > q.limit:
		return spi.RefuseNever()
	case q.used+q.inherited+n > q.limit:
		return spi.RefuseUntil(farRetry)
	}
	q.used += n
	return spi.Grant()
}

func (q *quota) Release(time.Time, int64) {}

func (q *quota) Cancel(_ time.Time, n int64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.sealed {
		q.used -= n
	}
}

func (q *quota) Reconfigure(_ time.Time, p spi.Params) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.limit = p["limit"]
	return nil
}

func (q *quota) Snapshot(time.Time) spi.Snapshot {
	q.mu.Lock()
	defer q.mu.Unlock()
	in := q.used + q.inherited
	return spi.Snapshot{Kind: q.kind, Limit: q.limit, InUse: in, Available: max(0, q.limit-in)}
}

func (q *quota) Seal(time.Time) []spi.Usage {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.sealed = true
	return []spi.Usage{{Units: q.used + q.inherited, Until: farRetry}}
}

func (q *quota) Inherit(_ time.Time, usage []spi.Usage) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, u := range usage {
		q.inherited += u.Units
	}
}

// plainRateKind is a rate kind without Handover or Inheritor.
type plainRateKind struct{}

func (plainRateKind) Name() string                { return "test.plainrate" }
func (plainRateKind) Class() spi.Class            { return spi.ClassRate }
func (plainRateKind) Validate(p spi.Params) error { return quotaKind{}.Validate(p) }
func (plainRateKind) New(p spi.Params, now time.Time) (spi.Limiter, error) {
	l, err := quotaKind{name: "test.plainrate"}.New(p, now)
	return struct{ spi.Limiter }{l}, err
}
