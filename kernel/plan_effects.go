package kernel

import (
	"fmt"
	"time"

	"github.com/sluicerpc/sluice/spi"
)

// The effects of a plan, computed from the readings it took: what DESIGN.md
// section 2 (the semantics of updates) says for each change, with the
// figures of this one.

func stateEffect(sp *StatePlan) string {
	conc := sp.Class == spi.ClassConcurrency
	switch sp.Action {
	case PlanReuse:
		return "unchanged: holders, waiters and consumed quota carry on"
	case PlanCreate:
		if conc {
			return "a new state: nothing carried; new requests are limited from publication"
		}
		return "a new rate lineage: it starts with nothing consumed (a rate added, or removed and re-added)"
	case PlanRetire:
		if conc {
			return fmt.Sprintf("retired: new requests no longer take it; its %d holders and %d waiters finish under the programs they captured", sp.InUse, sp.Waiters)
		}
		return fmt.Sprintf("retired: the lineage ends for new requests; %d waiters of earlier programs keep it", sp.Waiters)
	case PlanHandover:
		if conc {
			return fmt.Sprintf("kind %s -> %s: the new state counts the %d units the old one's holders hold until they release; %d waiters move to the new limit", sp.OldKind, sp.Kind, sp.InUse, sp.Waiters)
		}
		return fmt.Sprintf("algorithm %s -> %s: a new lineage inherits the old usage (%d) as a barrier until the later of its natural expiry and the new horizon; old waiters granted late are charged to the new lineage", sp.OldKind, sp.Kind, sp.InUse)
	case PlanReconfigure:
		if !conc {
			return fmt.Sprintf("parameters %v -> %v: the lineage continues, its consumed quota (%d) carries over; nothing is refilled or reset at publication", sp.Old, sp.New, sp.InUse)
		}
		switch {
		case sp.NewLimit > sp.OldLimit:
			more := max(0, sp.NewLimit-sp.InUse)
			return fmt.Sprintf("limit %d -> %d with %d active: %d more may enter now; %d waiters are woken in FIFO order first", sp.OldLimit, sp.NewLimit, sp.InUse, more, sp.Waiters)
		case sp.NewLimit < sp.OldLimit && sp.InUse >= sp.NewLimit:
			return fmt.Sprintf("limit %d -> %d with %d active: all %d finish, nobody is evicted; nobody new enters until fewer than %d are active", sp.OldLimit, sp.NewLimit, sp.InUse, sp.InUse, sp.NewLimit)
		case sp.NewLimit < sp.OldLimit:
			return fmt.Sprintf("limit %d -> %d with %d active: nobody is evicted; %d more may enter now", sp.OldLimit, sp.NewLimit, sp.InUse, sp.NewLimit-sp.InUse)
		}
		return fmt.Sprintf("parameters %v -> %v at the same limit %d: holders and waiters carry on", sp.Old, sp.New, sp.NewLimit)
	}
	return ""
}

// partitionPlan is the plan of the partition layer: cur's namespace (nil
// program or layer: none) against the candidate's, as the binder resolved it.
func partitionPlan(cur *program, d *partDesc, b *binder, now time.Time) *PartitionPlan {
	var old *namespace
	if cur != nil {
		old = cur.part
	}
	switch {
	case d == nil && old == nil:
		return nil
	case d == nil:
		return &PartitionPlan{Action: "retire", Selector: old.name, Keys: old.count.Load(), OldMax: old.max.Load(), OldIdle: time.Duration(old.idle.Load()),
			Effect: "the partition layer is removed for new requests; requests of earlier programs finish in the old namespace"}
	}
	p := &PartitionPlan{Selector: fmt.Sprintf("%s@v%d", d.key.name, d.key.version), NewMax: int64(d.policy.MaxPartitions), NewIdle: d.policy.IdleTimeout}
	if b.liveNS == nil {
		p.Action = "new"
		p.Effect = "a new, empty namespace: every key starts fresh"
		if old != nil {
			p.Effect += fmt.Sprintf("; requests of earlier programs finish in the old one (%s, %d keys)", old.name, old.count.Load())
		}
		return p
	}
	ns := b.liveNS
	p.Action, p.Keys, p.OldMax, p.OldIdle = "keep", ns.count.Load(), ns.max.Load(), time.Duration(ns.idle.Load())
	switch {
	case p.NewMax > p.OldMax:
		p.Effect = fmt.Sprintf("MaxPartitions %d -> %d with %d keys: %d new keys may be admitted", p.OldMax, p.NewMax, p.Keys, max(0, p.NewMax-p.Keys))
	case p.NewMax < p.OldMax:
		p.Effect = fmt.Sprintf("MaxPartitions %d -> %d with %d keys: nobody is evicted; new keys are refused (partition_capacity) until idle reclaim brings the count under %d", p.OldMax, p.NewMax, p.Keys, p.NewMax)
	default:
		p.Effect = fmt.Sprintf("the live namespace and its %d keys are kept", p.Keys)
	}
	if p.NewIdle != p.OldIdle {
		p.Effect += fmt.Sprintf("; IdleTimeout %v -> %v applies to every entry's existing last use", p.OldIdle, p.NewIdle)
	}
	for slot, ch := range b.nsPlan {
		class := spi.Class(slot + 1)
		switch ch {
		case nsAdd:
			p.Effect += fmt.Sprintf("; each partition gains a %s limit", class)
		case nsRemove:
			p.Effect += fmt.Sprintf("; each partition's %s limit is removed for new requests", class)
		case nsReconfigure:
			p.Effect += fmt.Sprintf("; each partition's %s limit is reconfigured in place", class)
		case nsHandover:
			p.Effect += fmt.Sprintf("; each partition's %s limiter kind is replaced, its usage carried", class)
		}
	}
	_ = now
	return p
}

// queueEffects lists what changes between the queue policies.
func queueEffects(old, nw QueuePolicy, enabled bool) []string {
	if !enabled {
		old = QueuePolicy{}
	}
	var out []string
	if nw.MaxQueuedCalls != old.MaxQueuedCalls || nw.MaxQueuedBytes != old.MaxQueuedBytes {
		shrink := nw.MaxQueuedCalls < old.MaxQueuedCalls || nw.MaxQueuedBytes < old.MaxQueuedBytes
		line := fmt.Sprintf("MaxQueuedCalls %d -> %d, MaxQueuedBytes %d -> %d", old.MaxQueuedCalls, nw.MaxQueuedCalls, old.MaxQueuedBytes, nw.MaxQueuedBytes)
		if shrink {
			line += ": nobody is evicted; new waiters are refused while the shared count is at or above the new bound"
		}
		out = append(out, line)
	}
	if nw.MaxQueueDelay != old.MaxQueueDelay {
		out = append(out, fmt.Sprintf("MaxQueueDelay %v -> %v: captured at enqueue, a waiter keeps the delay it entered with", old.MaxQueueDelay, nw.MaxQueueDelay))
	}
	if nw.QueueOneWayCalls != old.QueueOneWayCalls {
		out = append(out, fmt.Sprintf("QueueOneWayCalls %v -> %v: captured with the program, a queued one-way call is not dropped", old.QueueOneWayCalls, nw.QueueOneWayCalls))
	}
	return out
}
