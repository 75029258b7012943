package spi

import "time"

// LimiterKind is a registered kind of limiter: it validates parameters and
// builds limiters. Implementations must be safe for concurrent use.
type LimiterKind interface {
	// Name is the registry key, for example "concurrency" or
	// "tokenbucket". Third-party kinds should use a qualified name such
	// as "example.com/gcra".
	Name() string
	// Class says whether the kind bounds held units or units over time.
	Class() Class
	// Validate checks p completely without side effects, so that a
	// later New or Reconfigure with the same p succeeds. Unknown names in
	// p are an error. The error should be a *ParamError naming the
	// parameter.
	Validate(p Params) error
	// New builds a limiter with parameters p at time now. For rate kinds
	// the new limiter starts full unless the caller reconciles it; the
	// kernel never publishes a fresh limiter for a scope that already has
	// state.
	New(p Params, now time.Time) (Limiter, error)
}
