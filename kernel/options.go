package kernel

import (
	"time"

	"github.com/sluicerpc/sluice/spi"
)

// Options is a complete admission configuration: the candidate that Enable
// and Update take. It is never patched: every publication replaces the whole
// configuration, and the kernel copies what it keeps, so the caller may
// reuse or change an Options value after the call returns.
type Options struct {
	// Global applies to every method.
	Global Rule
	// Services maps a service name to the rule that applies to each of
	// its methods.
	Services map[string]Rule
	// Methods maps "service/method" to the rule for that method alone.
	Methods map[string]Rule
	// Queue says whether and how refused requests wait.
	Queue QueuePolicy
	// Partition is the optional partition layer, applied to every
	// request after the Global, Service and Method scopes.
	Partition *PartitionPolicy
}

// Rule is the set of limits of one scope: at most one concurrency limiter and
// at most one rate limiter. A rule that is present (in Services or Methods)
// must have at least one limit; the zero Global rule means no global limit.
type Rule struct {
	Limits []spi.Spec
}

// QueuePolicy bounds waiting. Either every bound is zero (no request waits:
// a refusal is immediate) or every bound is positive.
type QueuePolicy struct {
	// MaxQueuedCalls bounds the number of waiting requests, counted across
	// every program that is still live (one shared accounting).
	MaxQueuedCalls int
	// MaxQueuedBytes bounds the payload bytes that waiting requests
	// retain, in the same shared accounting.
	MaxQueuedBytes int64
	// MaxQueueDelay bounds how long one request waits. A waiter keeps the
	// delay of the program it captured.
	MaxQueueDelay time.Duration
	// QueueOneWayCalls lets one-way requests wait; otherwise a refused
	// one-way request is dropped at once.
	QueueOneWayCalls bool
}

// Enabled reports whether the policy lets requests wait at all.
func (q QueuePolicy) Enabled() bool { return q.MaxQueuedCalls > 0 }

// Clone returns a deep copy of o.
func (o Options) Clone() Options {
	c := o
	c.Global = o.Global.clone()
	c.Services = cloneRules(o.Services)
	c.Methods = cloneRules(o.Methods)
	if o.Partition != nil {
		pp := *o.Partition
		pp.Rule = o.Partition.Rule.clone()
		c.Partition = &pp
	}
	return c
}

func (r Rule) clone() Rule {
	if r.Limits == nil {
		return Rule{}
	}
	c := Rule{Limits: make([]spi.Spec, len(r.Limits))}
	for i, s := range r.Limits {
		c.Limits[i] = spi.Spec{Kind: s.Kind, Params: s.Params.Clone()}
	}
	return c
}

func cloneRules(m map[string]Rule) map[string]Rule {
	if m == nil {
		return nil
	}
	c := make(map[string]Rule, len(m))
	for k, r := range m {
		c[k] = r.clone()
	}
	return c
}
