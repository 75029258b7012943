package spi

import (
	"fmt"
	"maps"
	"slices"
	"sync"
)

// Registry maps kind names to LimiterKinds. The zero value is empty and
// ready to use; all methods are safe for concurrent use. Lookups happen on
// the control path (building a program), never per request.
type Registry struct {
	mu    sync.RWMutex
	kinds map[string]LimiterKind
}

// DefaultRegistry is where limiter modules register their kinds from init
// functions, and where the kernel looks unless it is given another registry.
var DefaultRegistry = &Registry{}

// Register adds k under k.Name(). It fails with ErrDuplicateKind if the name
// is taken, and rejects a nil kind, an empty name and an unknown class.
func (r *Registry) Register(k LimiterKind) error {
	if k == nil {
		return fmt.Errorf("spi: register: nil limiter kind")
	}
	name := k.Name()
	if name == "" {
		return fmt.Errorf("spi: register: empty kind name")
	}
	if c := k.Class(); c != ClassConcurrency && c != ClassRate {
		return fmt.Errorf("spi: register %q: class %d is neither concurrency nor rate", name, c)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.kinds[name]; dup {
		return fmt.Errorf("%w: %q", ErrDuplicateKind, name)
	}
	if r.kinds == nil {
		r.kinds = make(map[string]LimiterKind)
	}
	r.kinds[name] = k
	return nil
}

// MustRegister is Register that panics on error, for init functions.
func (r *Registry) MustRegister(k LimiterKind) {
	if err := r.Register(k); err != nil {
		panic(err)
	}
}

// Lookup returns the kind registered under name.
func (r *Registry) Lookup(name string) (LimiterKind, error) {
	r.mu.RLock()
	k, ok := r.kinds[name]
	r.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknownKind, name)
	}
	return k, nil
}

// Names returns the registered kind names, sorted.
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return slices.Sorted(maps.Keys(r.kinds))
}

// Validate checks that s names a registered kind and that its parameters
// are valid for that kind.
func (r *Registry) Validate(s Spec) (LimiterKind, error) {
	k, err := r.Lookup(s.Kind)
	if err != nil {
		return nil, err
	}
	if err := k.Validate(s.Params); err != nil {
		return nil, err
	}
	return k, nil
}
