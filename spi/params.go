package spi

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// Params are a limiter's parameters: named integers. Durations are stored in
// nanoseconds (see [Params.Duration]). The flat shape crosses process
// boundaries (plugins) and configuration files without reflection.
type Params map[string]int64

// Int returns the parameter name, and whether it is set.
func (p Params) Int(name string) (int64, bool) {
	v, ok := p[name]
	return v, ok
}

// Duration returns the parameter name as a time.Duration, and whether it is
// set.
func (p Params) Duration(name string) (time.Duration, bool) {
	v, ok := p[name]
	return time.Duration(v), ok
}

// Clone returns a copy that shares nothing with p.
func (p Params) Clone() Params { return maps.Clone(p) }

// Equal reports whether p and q set the same names to the same values.
func (p Params) Equal(q Params) bool { return maps.Equal(p, q) }

// String renders the parameters sorted by name, for logs and errors.
func (p Params) String() string {
	names := slices.Sorted(maps.Keys(p))
	var b strings.Builder
	b.WriteByte('{')
	for i, n := range names {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s=%d", n, p[n])
	}
	b.WriteByte('}')
	return b.String()
}

// Spec names a limiter kind and its parameters: one entry of a rule.
type Spec struct {
	Kind   string
	Params Params
}

// Equal reports whether s and t name the same kind with the same
// parameters.
func (s Spec) Equal(t Spec) bool { return s.Kind == t.Kind && s.Params.Equal(t.Params) }

// String renders the spec as kind{params}.
func (s Spec) String() string { return s.Kind + s.Params.String() }
