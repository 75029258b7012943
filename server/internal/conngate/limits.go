package conngate

import (
	"fmt"
	"math"
)

// Default bounds.
const (
	DefaultMaxConnections = 1024
	DefaultMaxHandshakes  = 64
	// DefaultMaxHandshakesPerAddress is an eighth of DefaultMaxHandshakes:
	// one source address (one IPv4 address, one IPv6 /64) can hold at most
	// 8 of the 64 handshake slots, so it takes 8 addresses stalling at
	// once to lock other clients out, and a client behind a NAT still gets
	// 8 handshakes in parallel (a reconnect storm of 8 connections at once
	// from one address).
	DefaultMaxHandshakesPerAddress = 8
)

// MaxLimit is the largest value either bound accepts (the two counts share
// one 64-bit word).
const MaxLimit = math.MaxInt32

// Limits are the admission bounds of a [Gate].
type Limits struct {
	// MaxConnections bounds the connections alive at once: admitted and not
	// yet released. At least 1.
	MaxConnections int
	// MaxHandshakes bounds the admitted connections that have not reached
	// the Ready transition. 0 means no separate bound: handshakes are
	// bounded by MaxConnections only. Never above MaxConnections.
	MaxHandshakes int
	// MaxHandshakesPerAddress bounds the connections in handshake from one
	// source address (see [SourceKey]). 0 means no separate bound: they are
	// bounded by the handshake bound in force only. Never above that bound
	// (MaxHandshakes, or MaxConnections when MaxHandshakes is 0).
	// Connections admitted without an address ([Slot.Admit], or a
	// [Slot.AdmitFrom] with an invalid address) are not bounded by it.
	MaxHandshakesPerAddress int
}

// DefaultLimits returns 1024 connections, 64 handshakes and 8 handshakes
// per source address.
func DefaultLimits() Limits {
	return Limits{
		MaxConnections:          DefaultMaxConnections,
		MaxHandshakes:           DefaultMaxHandshakes,
		MaxHandshakesPerAddress: DefaultMaxHandshakesPerAddress,
	}
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
	case l.MaxHandshakesPerAddress < 0:
		return fmt.Errorf("conngate: MaxHandshakesPerAddress must be at least 0 (0 = bounded by MaxHandshakes), got %d", l.MaxHandshakesPerAddress)
	case l.MaxHandshakesPerAddress > l.effectiveHandshakes():
		if l.MaxHandshakes == 0 {
			return fmt.Errorf("conngate: MaxHandshakesPerAddress (%d) must not exceed MaxConnections (%d), the handshake bound when MaxHandshakes is 0", l.MaxHandshakesPerAddress, l.MaxConnections)
		}
		return fmt.Errorf("conngate: MaxHandshakesPerAddress (%d) must not exceed MaxHandshakes (%d)", l.MaxHandshakesPerAddress, l.MaxHandshakes)
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

// effectivePerAddress returns the per-address handshake bound in force.
func (l Limits) effectivePerAddress() int {
	if l.MaxHandshakesPerAddress == 0 {
		return l.effectiveHandshakes()
	}
	return l.MaxHandshakesPerAddress
}
