package kernel

import "fmt"

// Publish is the lifecycle writer of a configuration manager: it makes the
// complete candidate o the admission in force, or disables admission when o
// is nil, whatever the current mode, but only if expected is still the
// current generation (a *PublicationConflictError otherwise, and nothing
// changes). It is Enable, Update or Disable with compare-and-publish on
// every transition, so that a writer that read generation g never publishes
// on top of a configuration it did not see.
//
// Every successful Publish makes a new generation, a nil candidate while
// disabled included (Disable alone changes nothing then): a manager whose
// configuration has parts besides admission (server.Reconfigure) names each
// configuration it applies by its generation. A candidate Update would
// reject returns the same error and changes nothing.
func (k *Kernel) Publish(expected uint64, o *Options) (uint64, error) {
	if o != nil {
		return k.publish(*o, func() error { return k.expect(expected) })
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.sealed.Load() {
		return k.gen.Load(), ErrLifecycleClosed
	}
	if err := k.expect(expected); err != nil {
		return k.gen.Load(), err
	}
	k.enabled = false
	k.gen.Add(1)
	k.cell.Clear()
	return k.gen.Load(), nil
}

// expect checks, under k.mu, that expected is the current generation.
func (k *Kernel) expect(expected uint64) error {
	if cur := k.gen.Load(); cur != expected {
		return &PublicationConflictError{Expected: expected, Current: cur}
	}
	return nil
}

// PlanPublish is the dry run of Publish: it checks expected whatever the
// mode (a *PublicationConflictError when the generation moved) and returns
// what Publish(expected, o) would do, without publishing. For a nil o the
// plan has Disable set and retires every state of the current program
// (none while disabled): new requests would bypass admission, and requests
// that captured a program finish under it.
func (k *Kernel) PlanPublish(expected uint64, o *Options) (*Plan, error) {
	if o != nil {
		return k.plan(expected, *o, true)
	}
	if k.sealed.Load() {
		return nil, ErrLifecycleClosed
	}
	now := k.clock.Now()
	k.mu.Lock()
	if err := k.expect(expected); err != nil {
		k.mu.Unlock()
		return nil, err
	}
	plan := &Plan{Generation: k.gen.Load(), Disable: true}
	var cur *program
	if g := k.cell.Load(); g != nil && k.enabled {
		cur = g.Value()
	}
	k.mu.Unlock()
	if cur == nil {
		return plan, nil
	}
	k.qmu.Lock()
	defer k.qmu.Unlock()
	for _, st := range cur.states {
		snap := st.lim.Snapshot(now)
		sp := StatePlan{Name: st.name, Class: st.class, Action: PlanRetire, Kind: st.kind.Name(), Old: st.params.Clone(),
			OldLimit: snap.Limit, InUse: snap.InUse, Waiters: int(st.waiting.Load())}
		sp.Effect = stateEffect(&sp)
		plan.States = append(plan.States, sp)
	}
	sortStatePlans(plan.States)
	plan.Partition = partitionPlan(cur, nil, nil, now)
	if q := cur.queue; q.MaxQueuedCalls > 0 {
		plan.Queue = []string{fmt.Sprintf("no queue for new requests (MaxQueuedCalls was %d); requests already queued wait under the program they captured", q.MaxQueuedCalls)}
	}
	return plan, nil
}
