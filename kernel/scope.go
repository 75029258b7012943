package kernel

import (
	"fmt"

	"github.com/sluicerpc/sluice/spi"
)

// ScopeKind is the level a rule applies at.
type ScopeKind uint8

const (
	ScopeGlobal ScopeKind = iota + 1
	ScopeService
	ScopeMethod
)

func (k ScopeKind) String() string {
	switch k {
	case ScopeGlobal:
		return "global"
	case ScopeService:
		return "service"
	case ScopeMethod:
		return "method"
	}
	return "scope(?)"
}

// Scope identifies one rule's logical place: Global, a service, or a method.
// State is keyed by scope identity (plus the limiter class), never by the
// numbers a configuration gives it, so a resize binds to the same state.
type Scope struct {
	Kind ScopeKind
	// ID is the ServiceID or MethodID; 0 for Global.
	ID uint32
}

// stateKey is a state's identity in the kernel's registry.
type stateKey struct {
	scope Scope
	class spi.Class
	// lineage numbers the rate states of a scope (0 for concurrency): a
	// removed and re-added rate limit, or a replaced algorithm, starts a
	// new lineage.
	lineage uint64
}

func scopeName(c *Catalog, s Scope) string {
	switch s.Kind {
	case ScopeGlobal:
		return "global"
	case ScopeService:
		return "service:" + c.ServiceName(ServiceID(s.ID))
	case ScopeMethod:
		return "method:" + c.FullName(MethodID(s.ID))
	}
	return fmt.Sprintf("scope(%d:%d)", s.Kind, s.ID)
}
