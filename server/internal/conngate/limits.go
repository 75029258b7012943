package conngate

import (
	"fmt"
	"math"
)

// Default bounds.
const (
	DefaultMaxConnections = 1024
	DefaultMaxHandshakes  = 64
)

// MaxLimit is the largest value either bound accepts (the two counts share
// one 64-bit word).
const MaxLimit = math.MaxInt32

// Limits are the two admission bounds of a [Gate].
type Limits struct {
	// MaxConnections bounds the connections alive at once: admitted and not
	// yet released. At least 1.
	MaxConnections int
	// MaxHandshakes bounds the admitted connections that have not reached
	// the Ready transition. 0 means no separate bound: handshakes are
	// bounded by MaxConnections only. Never above MaxConnections.
	MaxHandshakes int
}

// DefaultLimits returns 1024 connections and 64 handshakes.
func DefaultLimits() Limits {
	return Limits{MaxConnections: DefaultMaxConnections, MaxHandshakes: DefaultMaxHandshakes}
}

// Validate reports the first invalid field, naming it.
func (l Limits) Validate() error {
	switch {
	case l.MaxConnections < 1:
		return fmt.Errorf("conngate: MaxConnections must be at least 1, got %d", l.MaxConnections)
	case l.MaxConnections > MaxLimit:
		return fmt.Errorf("conngate: MaxConnections must be at most %d, got %d", MaxLimit, l.MaxConnections)
	case l.MaxHandshakes < 0:
		return fmt.Errorf("conngate: MaxHandshakes must be at least 0 (0 = bounded by MaxConnections), got %d", l.MaxHandshakes)
	case l.MaxHandshakes > l.MaxConnections:
		return fmt.Errorf("conngate: MaxHandshakes (%d) must not exceed MaxConnections (%d)", l.MaxHandshakes, l.MaxConnections)
	}
	return nil
}

// effectiveHandshakes returns the handshake bound in force.
func (l Limits) effectiveHandshakes() int {
	if l.MaxHandshakes == 0 {
		return l.MaxConnections
	}
	return l.MaxHandshakes
}
