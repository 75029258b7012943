package kernel

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/sluicerpc/sluice/spi"
)

// candidate is a validated, resolved Options value, prepared outside any
// lock: every limit is checked by its kind, and a spare limiter is built for
// every state the program needs, in case the registry has none yet.
type candidate struct {
	opts  Options
	descs []stateDesc
	// Index of the descs of each scope, by class slot (0 concurrency,
	// 1 rate); -1 when the rule has no limit of that class.
	global   ruleSlots
	services []ruleSlots // by ServiceID
	methods  []ruleSlots // by MethodID
	part     *partDesc   // nil: no partition layer
}

// partDesc is a prepared partition policy.
type partDesc struct {
	policy PartitionPolicy
	key    nsKey
	spec   *partSpec
	spares [2]spi.Limiter // built from spec, to check handover support
}

type ruleSlots [2]int32

var noSlots = ruleSlots{-1, -1}

func classSlot(c spi.Class) int {
	if c == spi.ClassRate {
		return 1
	}
	return 0
}

// stateDesc is one state a candidate binds.
type stateDesc struct {
	key   stateKey
	field string // `Global.Limits[0]`
	kind  spi.LimiterKind
	spec  spi.Spec
	spare spi.Limiter
}

// prepare validates o completely and returns the candidate, or a
// *CandidateError listing every problem.
func (k *Kernel) prepare(o Options, now time.Time) (*candidate, error) {
	var probs problems
	c := &candidate{opts: o.Clone(), global: noSlots}
	c.services = slices.Repeat([]ruleSlots{noSlots}, k.cat.Services())
	c.methods = slices.Repeat([]ruleSlots{noSlots}, k.cat.Methods())

	limits := 0
	c.global = k.prepareRule(c, &probs, "Global", c.opts.Global, Scope{Kind: ScopeGlobal}, true, now)
	limits += len(c.opts.Global.Limits)

	for _, name := range slices.Sorted(maps.Keys(c.opts.Services)) {
		field := fmt.Sprintf("Services[%q]", name)
		sid, ok := k.cat.Service(name)
		if !ok {
			probs.add(field, "unknown service")
			continue
		}
		r := c.opts.Services[name]
		limits += len(r.Limits)
		c.services[sid] = k.prepareRule(c, &probs, field, r, Scope{Kind: ScopeService, ID: uint32(sid)}, false, now)
	}
	for _, name := range slices.Sorted(maps.Keys(c.opts.Methods)) {
		field := fmt.Sprintf("Methods[%q]", name)
		mid, ok := k.cat.Lookup(name)
		if !ok {
			probs.add(field, "unknown method (want \"service/method\" registered in the catalog)")
			continue
		}
		r := c.opts.Methods[name]
		limits += len(r.Limits)
		c.methods[mid] = k.prepareRule(c, &probs, field, r, Scope{Kind: ScopeMethod, ID: uint32(mid)}, false, now)
	}
	if c.opts.Partition != nil {
		c.part = k.preparePartition(&probs, *c.opts.Partition, now)
		limits += len(c.opts.Partition.Rule.Limits)
	}
	if limits == 0 && len(probs) == 0 {
		probs.add("Options", "at least one limit is required (use Disable to turn admission off)")
	}
	validateQueue(&probs, c.opts.Queue)
	if err := probs.err(); err != nil {
		return nil, err
	}
	return c, nil
}

func (k *Kernel) prepareRule(c *candidate, probs *problems, field string, r Rule, scope Scope, optional bool, now time.Time) ruleSlots {
	slots := noSlots
	if len(r.Limits) == 0 {
		if !optional {
			probs.add(field+".Limits", "a rule must have at least one limit")
		}
		return slots
	}
	for i, spec := range r.Limits {
		f := fmt.Sprintf("%s.Limits[%d]", field, i)
		kind, err := k.reg.Validate(spec)
		if err != nil {
			var pe *spi.ParamError
			switch {
			case errors.Is(err, spi.ErrUnknownKind):
				probs.add(f+".Kind", fmt.Sprintf("unknown limiter kind %q (registered: %s)", spec.Kind, strings.Join(k.reg.Names(), ", ")))
			case errors.As(err, &pe) && pe.Param != "":
				probs.add(f+"."+pe.Param, pe.Reason)
			default:
				probs.add(f, err.Error())
			}
			continue
		}
		slot := classSlot(kind.Class())
		if slots[slot] >= 0 {
			probs.add(f, fmt.Sprintf("a rule has at most one %s limit; %s is already %s", kind.Class(), field, c.descs[slots[slot]].spec))
			continue
		}
		spare, err := kind.New(spec.Params, now)
		if err != nil {
			probs.add(f, err.Error())
			continue
		}
		slots[slot] = int32(len(c.descs))
		c.descs = append(c.descs, stateDesc{
			key:   stateKey{scope: scope, class: kind.Class()},
			field: f,
			kind:  kind,
			spec:  spi.Spec{Kind: spec.Kind, Params: spec.Params.Clone()},
			spare: spare,
		})
	}
	return slots
}

func (k *Kernel) preparePartition(probs *problems, pp PartitionPolicy, now time.Time) *partDesc {
	const f = "Partition"
	if pp.Selector.Name == "" {
		probs.add(f+".Selector.Name", "required: the selector's identity is its name and version")
	}
	if pp.Selector.Key == nil {
		probs.add(f+".Selector.Key", "required")
	}
	if pp.MaxPartitions < 1 {
		probs.add(f+".MaxPartitions", fmt.Sprintf("must be at least 1, got %d", pp.MaxPartitions))
	} else if pp.MaxPartitions > MaxPartitionsLimit {
		probs.add(f+".MaxPartitions", fmt.Sprintf("must be at most %d (MaxPartitionsLimit; about 0.5 KB per key), got %d", MaxPartitionsLimit, pp.MaxPartitions))
	}
	if pp.IdleTimeout <= 0 {
		probs.add(f+".IdleTimeout", fmt.Sprintf("must be positive, got %v", pp.IdleTimeout))
	}
	// The rule is checked like any other; its descs are not registry
	// states, so they are taken back out of a scratch candidate.
	scratch := &candidate{}
	slots := k.prepareRule(scratch, probs, f+".Rule", pp.Rule, Scope{}, false, now)
	d := &partDesc{policy: pp, key: nsKey{name: pp.Selector.Name, version: pp.Selector.Version}, spec: &partSpec{}}
	for slot, i := range slots {
		if i >= 0 {
			sd := scratch.descs[i]
			d.spec.kinds[slot] = sd.kind
			d.spec.params[slot] = sd.spec.Params
			d.spares[slot] = sd.spare
		}
	}
	return d
}

func validateQueue(probs *problems, q QueuePolicy) {
	if q.MaxQueuedCalls < 0 {
		probs.add("Queue.MaxQueuedCalls", "must not be negative")
	}
	if q.MaxQueuedBytes < 0 {
		probs.add("Queue.MaxQueuedBytes", "must not be negative")
	}
	if q.MaxQueueDelay < 0 {
		probs.add("Queue.MaxQueueDelay", "must not be negative")
	}
	zero := q.MaxQueuedCalls == 0 && q.MaxQueuedBytes == 0 && q.MaxQueueDelay == 0
	positive := q.MaxQueuedCalls > 0 && q.MaxQueuedBytes > 0 && q.MaxQueueDelay > 0
	if !zero && !positive && q.MaxQueuedCalls >= 0 && q.MaxQueuedBytes >= 0 && q.MaxQueueDelay >= 0 {
		probs.add("Queue", "MaxQueuedCalls, MaxQueuedBytes and MaxQueueDelay must be all zero (no waiting) or all positive")
	}
	if zero && q.QueueOneWayCalls {
		probs.add("Queue.QueueOneWayCalls", "requires queueing (MaxQueuedCalls, MaxQueuedBytes and MaxQueueDelay positive)")
	}
}

type problems []Problem

func (p *problems) add(field, reason string) { *p = append(*p, Problem{Field: field, Reason: reason}) }

func (p problems) err() error {
	if len(p) == 0 {
		return nil
	}
	out := slices.Clone([]Problem(p))
	slices.SortStableFunc(out, func(a, b Problem) int { return strings.Compare(a.Field, b.Field) })
	return &CandidateError{Problems: out}
}
