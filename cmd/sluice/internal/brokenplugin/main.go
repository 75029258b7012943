// Command brokenplugin is a plugin binary for the tests of "sluice
// conformance": it serves a sound semaphore, one that credits a double
// release twice, and a kind that declares no conformance capabilities.
package main

import (
	"fmt"
	"sync"
	"time"

	"github.com/sluicerpc/sluice/conformance/capabilities"
	"github.com/sluicerpc/sluice/plugin"
	"github.com/sluicerpc/sluice/spi"
)

// The names of the kinds served.
const (
	SoundName        = "demo.sound"
	DoubleCreditName = "demo.double-credit"
	UndeclaredName   = "demo.undeclared"
)

// semKind is a semaphore kind with parameter "limit".
type semKind struct {
	name         string
	doubleCredit bool // Release of units not held is credited
}

func (k semKind) Name() string   { return k.name }
func (semKind) Class() spi.Class { return spi.ClassConcurrency }

func (semKind) Validate(p spi.Params) error {
	if len(p) != 1 {
		return fmt.Errorf("want exactly the parameter limit, got %v", p)
	}
	if v, ok := p["limit"]; !ok || v < 1 {
		return spi.InvalidParam("limit", "required and positive")
	}
	return nil
}

func (k semKind) New(p spi.Params, _ time.Time) (spi.Limiter, error) {
	if err := k.Validate(p); err != nil {
		return nil, err
	}
	return &sem{k: k, limit: p["limit"]}, nil
}

type sem struct {
	k     semKind
	mu    sync.Mutex
	limit int64
	held  int64
}

func (s *sem) TryAcquire(_ time.Time, n int64) spi.Decision {
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

func (s *sem) Release(_ time.Time, n int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n > s.held && !s.k.doubleCredit {
		panic(fmt.Sprintf("released %d units but only %d are held", n, s.held))
	}
	s.held -= n
}

func (s *sem) Cancel(now time.Time, n int64) { s.Release(now, n) }

func (s *sem) Reconfigure(_ time.Time, p spi.Params) error {
	if err := s.k.Validate(p); err != nil {
		return err
	}
	s.mu.Lock()
	s.limit = p["limit"]
	s.mu.Unlock()
	return nil
}

func (s *sem) Snapshot(time.Time) spi.Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	return spi.Snapshot{Kind: s.k.name, Limit: s.limit, InUse: max(s.held, 0), Available: max(0, s.limit-s.held)}
}

func main() {
	caps := capabilities.Limiter{
		Class:            spi.ClassConcurrency,
		Params:           func(limit int64) spi.Params { return spi.Params{"limit": limit} },
		ReconfigureLimit: true,
	}
	plugin.Serve(plugin.ServeConfig{LimiterKinds: []plugin.LimiterKindEntry{
		{Kind: semKind{name: SoundName}, Capabilities: &caps},
		{Kind: semKind{name: DoubleCreditName, doubleCredit: true}, Capabilities: &caps},
		{Kind: semKind{name: UndeclaredName}},
	}})
}
