package kernel

import (
	"slices"
	"strings"
	"time"

	"github.com/sluicerpc/sluice/spi"
)

// PlanAction is what a publication would do to one state.
type PlanAction string

const (
	// PlanReuse: the scope's state is bound as it is.
	PlanReuse PlanAction = "reuse"
	// PlanReconfigure: the scope's state is bound with new parameters,
	// committed at publication (a resize, a rate parameter change).
	PlanReconfigure PlanAction = "reconfigure"
	// PlanCreate: the scope has no state (a rule added, or re-added: a
	// new rate lineage); a fresh one is created.
	PlanCreate PlanAction = "create"
	// PlanHandover: the limiter kind of the scope is replaced; a new
	// state inherits the old one's holders (concurrency) or usage (rate,
	// as a barrier).
	PlanHandover PlanAction = "handover"
	// PlanRetire: a state the current program binds and the candidate
	// does not; requests that captured earlier programs keep it.
	PlanRetire PlanAction = "retire"
)

// StatePlan is the plan of one state.
type StatePlan struct {
	// Name is the state's scope and class, as in ScopeStats
	// ("method:echo/Say/rate").
	Name string
	// Field is the candidate's field that binds it ("Methods[\"echo/Say\"].Limits[0]");
	// empty for a retired state.
	Field  string
	Class  spi.Class
	Action PlanAction
	// Kind is the limiter kind the candidate binds (the retired state's
	// own for PlanRetire); OldKind the one it replaces (PlanHandover).
	Kind, OldKind string
	// Old and New are the parameters before and after (Old nil for
	// PlanCreate, New nil for PlanRetire).
	Old, New spi.Params
	// OldLimit and NewLimit are the limiters' own reading of the limit
	// (spi.Snapshot.Limit) before and after, 0 when there is none.
	OldLimit, NewLimit int64
	// InUse and Waiters are the state's holders (or consumed quota) and
	// queued requests when the plan was made.
	InUse   int64
	Waiters int
	// Effect says what changes for queued and active requests
	// (DESIGN.md section 2, the semantics of updates).
	Effect string
}

// PartitionPlan is the plan of the partition layer.
type PartitionPlan struct {
	// Action: "keep" (the live namespace, same selector identity), "new"
	// (a new, empty namespace: no live one for the selector), "retire"
	// (the candidate has no partition layer).
	Action string
	// Selector is the candidate's selector identity ("name/version"), or
	// the retired one's.
	Selector string
	// Keys is the live namespace's key count (0 for a new one);
	// OldMax/NewMax and OldIdle/NewIdle its targets before and after.
	Keys             int64
	OldMax, NewMax   int64
	OldIdle, NewIdle time.Duration
	Effect           string
}

// Plan is what publishing a candidate would do, computed without
// publishing anything: the states it reuses, reconfigures, creates, hands
// over and retires, and the partition namespace it keeps or starts, each
// with what changes for queued and active requests.
type Plan struct {
	// Generation is the generation the plan was computed against; Enable
	// is true when admission is disabled (the publication would be an
	// Enable).
	Generation uint64
	Enable     bool
	// Disable is true for the plan of a nil candidate (PlanPublish):
	// admission would be disabled.
	Disable   bool
	States    []StatePlan
	Partition *PartitionPlan // nil: no partition layer before or after
	// Queue is what changes in the queue policy, one line per changed
	// field; empty when nothing changes.
	Queue []string
}

// Plan validates the complete candidate o as Update (admission enabled:
// expected must be the current generation, else a
// *PublicationConflictError) or Enable (disabled) would, and returns what
// publishing it would do, without publishing: no state, limit, partition
// bound or generation changes. A candidate Update would reject returns the
// same error. Publishing the same candidate right after (nothing else
// published in between) does what the plan says [TestPlanMatchesTheUpdate].
func (k *Kernel) Plan(expected uint64, o Options) (*Plan, error) {
	return k.plan(expected, o, false)
}

// plan is Plan; strict checks expected in both modes (PlanPublish).
func (k *Kernel) plan(expected uint64, o Options, strict bool) (*Plan, error) {
	if k.sealed.Load() {
		return nil, ErrLifecycleClosed
	}
	now := k.clock.Now()
	cand, err := k.prepare(o, now)
	if err != nil {
		return nil, err
	}
	k.mu.Lock()
	if k.sealed.Load() {
		k.mu.Unlock()
		return nil, ErrLifecycleClosed
	}
	gen := k.gen.Load()
	if (k.enabled || strict) && gen != expected {
		k.mu.Unlock()
		return nil, &PublicationConflictError{Expected: expected, Current: gen}
	}
	plan := &Plan{Generation: gen, Enable: !k.enabled}
	k.sweepLocked()
	lineages := k.lineages
	b := &binder{k: k, now: now}
	bound := make([]*state, len(cand.descs))
	for i, d := range cand.descs {
		if d.key.class == spi.ClassRate {
			bound[i] = b.bindRate(d, k.lastRate[d.key.scope])
		} else {
			bound[i] = b.bindConcurrency(d)
		}
	}
	if cand.part != nil {
		b.bindNamespace(cand.part)
	}
	k.lineages = lineages // a plan takes no lineage number
	if err := b.probs.err(); err != nil {
		k.mu.Unlock()
		return nil, err
	}
	var cur *program
	if g := k.cell.Load(); g != nil && k.enabled {
		cur = g.Value()
	}
	k.mu.Unlock()

	// Readings of the limiters, as Stats takes them.
	k.qmu.Lock()
	defer k.qmu.Unlock()
	kept := map[*state]bool{}
	for i, d := range cand.descs {
		st := bound[i]
		sp := StatePlan{Name: st.name, Field: d.field, Class: d.key.class, Kind: d.kind.Name(), New: d.spec.Params.Clone()}
		sp.NewLimit = d.spare.Snapshot(now).Limit
		switch {
		case slices.Contains(b.created, st):
			sp.Action = PlanCreate
			for _, h := range b.handovers {
				if h.to == st {
					sp.Action, sp.OldKind, sp.Old = PlanHandover, h.from.kind.Name(), h.from.params.Clone()
					snap := h.from.lim.Snapshot(now)
					sp.OldLimit, sp.InUse, sp.Waiters = snap.Limit, snap.InUse, int(h.from.waiting.Load())
					kept[h.from] = true
				}
			}
		default:
			kept[st] = true
			snap := st.lim.Snapshot(now)
			sp.Old, sp.OldLimit, sp.InUse, sp.Waiters = st.params.Clone(), snap.Limit, snap.InUse, int(st.waiting.Load())
			sp.Action = PlanReuse
			for _, ch := range b.changes {
				if ch.st == st {
					sp.Action = PlanReconfigure
				}
			}
			if sp.Action == PlanReuse {
				sp.NewLimit = sp.OldLimit
			}
		}
		sp.Effect = stateEffect(&sp)
		plan.States = append(plan.States, sp)
	}
	if cur != nil {
		for _, st := range cur.states {
			if kept[st] {
				continue
			}
			snap := st.lim.Snapshot(now)
			sp := StatePlan{Name: st.name, Class: st.class, Action: PlanRetire, Kind: st.kind.Name(), Old: st.params.Clone(),
				OldLimit: snap.Limit, InUse: snap.InUse, Waiters: int(st.waiting.Load())}
			sp.Effect = stateEffect(&sp)
			plan.States = append(plan.States, sp)
		}
	}
	sortStatePlans(plan.States)
	plan.Partition = partitionPlan(cur, cand.part, b, now)
	var old QueuePolicy
	if cur != nil {
		old = cur.queue
	}
	plan.Queue = queueEffects(old, cand.opts.Queue, cur != nil)
	return plan, nil
}

// sortStatePlans orders a plan's states by name.
func sortStatePlans(states []StatePlan) {
	slices.SortStableFunc(states, func(a, b StatePlan) int { return strings.Compare(a.Name, b.Name) })
}
