package kernel

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/sluicerpc/sluice/spi"
)

// binder accumulates, inside the publication section, what binding a
// candidate to the registry requires: states to create, parameters to
// commit, and rate lineages to hand over. Nothing is changed until commit.
type binder struct {
	k         *Kernel
	now       time.Time
	created   []*state
	changes   []paramChange
	handovers []handover
	probs     problems

	// The partition namespace: a new one to register, or a live one
	// whose targets and per-partition rule change in place.
	newNS  *namespace
	liveNS *namespace
	nsPlan nsPlan
	nsDesc *partDesc
	// woken are entry states whose waiters should be re-examined after
	// publication (a handover, a re-added limit).
	woken []*state
}

// nsPlan says, per class slot, how the entries of a live namespace change.
type nsPlan [2]nsSlotChange

type nsSlotChange uint8

const (
	nsKeep nsSlotChange = iota
	nsAdd
	nsRemove
	nsReconfigure
	nsHandover
)

type paramChange struct {
	st       *state
	old, new spi.Params
	field    string
}

// handover replaces the limiter kind of a scope: for rate, from's usage
// becomes a barrier in to; for concurrency, to counts from's holders as
// occupied until they release (succession.go). Either way from's later
// acquisitions are redirected to to.
type handover struct {
	from, to *state
}

// bind resolves a prepared candidate against the registry and commits its
// changes to stable state. It runs inside the publication section (k.mu
// held). It returns the program (not yet published) and the states whose
// waiters should be re-examined after publication.
//
// Concurrency states are keyed by scope: every program binds the same state
// for a scope while any program that binds it is live. Rate states are
// keyed by scope and lineage: a program continues the lineage that the last
// enabled program bound at the scope (same kind: reconfigured in place;
// another kind: a new lineage that inherits the old one's usage as a
// barrier), and starts a new, fresh lineage where the last enabled program
// had no rate limit (a removed and re-added rate).
//
// Commit is all or nothing: parameter changes are applied first and rolled
// back if one fails; handovers, which cannot fail or be undone, come last.
func (k *Kernel) bind(c *candidate) (*program, []*state, error) {
	k.sweepLocked()
	b := &binder{k: k, now: k.clock.Now()}
	bound := make([]*state, len(c.descs))
	for i, d := range c.descs {
		if d.key.class == spi.ClassRate {
			bound[i] = b.bindRate(d, k.lastRate[d.key.scope])
		} else {
			bound[i] = b.bindConcurrency(d)
		}
	}
	var ns *namespace
	if c.part != nil {
		ns = b.bindNamespace(c.part)
	}
	if err := b.probs.err(); err != nil {
		return nil, nil, err
	}
	if err := b.commit(); err != nil {
		return nil, nil, err
	}

	p := &program{
		k:      k,
		routes: compile(c, bound, k.cat),
		queue:  c.opts.Queue,
		opts:   c.opts,
		part:   ns,
	}
	if ns != nil {
		p.selector = c.part.policy.Selector.Key
		ns.refs.Add(1)
		for i := range p.routes {
			p.routes[i].needsClock = true // idle tracking reads the clock
		}
	}
	k.lastNS = ns
	seen := make(map[*state]bool, len(bound))
	for _, st := range bound {
		if !seen[st] {
			seen[st] = true
			st.refs.Add(1)
			p.states = append(p.states, st)
		}
	}
	// The rate lineages of this program are the ones the next
	// publication continues.
	k.lastRate = make(map[Scope]*state)
	for _, st := range p.states {
		if st.class == spi.ClassRate {
			k.lastRate[st.key.scope] = st
		}
	}
	wake := make([]*state, 0, len(b.changes)+len(b.handovers)+len(b.woken))
	for _, ch := range b.changes {
		wake = append(wake, ch.st)
	}
	for _, h := range b.handovers {
		wake = append(wake, h.from)
	}
	wake = append(wake, b.woken...)
	return p, wake, nil
}

func (b *binder) newState(d stateDesc, lineage uint64) *state {
	key := d.key
	key.lineage = lineage
	name := scopeName(b.k.cat, key.scope) + "/" + key.class.String()
	st := &state{key: key, name: name, kind: d.kind, class: key.class, lim: d.spare, params: d.spec.Params}
	b.created = append(b.created, st)
	return st
}

// bindConcurrency binds the scope's concurrency state: the newest one the
// registry keeps for the scope (while any program binds it, or while it
// still counts a predecessor's holders), reconfigured in place; or, for
// another kind, a successor that counts the old state's holders as
// occupied until they release; or a new state when the scope has none.
func (b *binder) bindConcurrency(d stateDesc) *state {
	st := b.k.concHead[d.key.scope]
	if st != nil && b.k.registry[st.key] != st {
		st = nil // reclaimed
	}
	switch {
	case st == nil:
		b.k.lineages++
		return b.newState(d, b.k.lineages)
	case st.kind.Name() != d.kind.Name():
		b.k.lineages++
		to := b.newState(d, b.k.lineages)
		to.carry = &carry{from: st}
		b.handovers = append(b.handovers, handover{from: st, to: to})
		return to
	case !st.params.Equal(d.spec.Params):
		b.changes = append(b.changes, paramChange{st: st, old: st.params, new: d.spec.Params, field: d.field})
	}
	return st
}

func (b *binder) bindRate(d stateDesc, prev *state) *state {
	if prev != nil && b.k.registry[prev.key] != prev {
		prev = nil // reclaimed: no live lineage to continue
	}
	switch {
	case prev == nil:
		b.k.lineages++
		return b.newState(d, b.k.lineages)
	case prev.kind.Name() == d.kind.Name():
		if !prev.params.Equal(d.spec.Params) {
			b.changes = append(b.changes, paramChange{st: prev, old: prev.params, new: d.spec.Params, field: d.field})
		}
		return prev
	}
	// Algorithm replaced: a new lineage that inherits the old usage.
	if _, ok := prev.lim.(spi.Handover); !ok {
		b.probs.add(d.field+".Kind", fmt.Sprintf("cannot replace rate limiter kind %q: it does not implement spi.Handover, so its usage cannot be carried", prev.kind.Name()))
		return nil
	}
	if _, ok := d.spare.(spi.Inheritor); !ok {
		b.probs.add(d.field+".Kind", fmt.Sprintf("cannot replace rate limiter kind %q with %q: the new kind does not implement spi.Inheritor, so the old usage cannot be carried", prev.kind.Name(), d.kind.Name()))
		return nil
	}
	b.k.lineages++
	st := b.newState(d, b.k.lineages)
	b.handovers = append(b.handovers, handover{from: prev, to: st})
	return st
}

// bindNamespace resolves the partition namespace: the one the kernel keeps
// for the selector identity (bound by a live program, whatever the
// programs in between bound, or kept for its rate usage), otherwise a new,
// empty one.
func (b *binder) bindNamespace(d *partDesc) *namespace {
	b.nsDesc = d
	prev := b.k.findNamespace(d.key)
	if prev == nil {
		b.newNS = newNamespace(d.key, int64(d.policy.MaxPartitions), d.policy.IdleTimeout, d.spec, b.now)
		return b.newNS
	}
	b.liveNS = prev
	old := prev.spec.Load()
	for slot := range 2 {
		ok, nk := old.kinds[slot], d.spec.kinds[slot]
		field := fmt.Sprintf("Partition.Rule.Limits[%s]", spi.Class(slot+1))
		switch {
		case ok == nil && nk == nil:
		case ok == nil:
			b.nsPlan[slot] = nsAdd
		case nk == nil:
			b.nsPlan[slot] = nsRemove
		case ok.Name() == nk.Name():
			if !old.params[slot].Equal(d.spec.params[slot]) {
				b.nsPlan[slot] = nsReconfigure
			}
		case slot == 0:
			// Each entry's new state counts the old one's holders.
			b.nsPlan[slot] = nsHandover
		default:
			if _, canHand := prev.def.states.Load().s[slot].lim.(spi.Handover); !canHand {
				b.probs.add(field+".Kind", fmt.Sprintf("cannot replace rate limiter kind %q: it does not implement spi.Handover, so its usage cannot be carried", ok.Name()))
			} else if _, canInherit := d.spares[slot].(spi.Inheritor); !canInherit {
				b.probs.add(field+".Kind", fmt.Sprintf("cannot replace rate limiter kind %q with %q: the new kind does not implement spi.Inheritor, so the old usage cannot be carried", ok.Name(), nk.Name()))
			} else {
				b.nsPlan[slot] = nsHandover
			}
		}
	}
	return prev
}

// findNamespace returns the newest namespace the kernel keeps for key, or
// nil. k.mu held, after sweepLocked.
func (k *Kernel) findNamespace(key nsKey) *namespace {
	for _, ns := range slices.Backward(k.spaces) {
		if ns.key == key {
			return ns
		}
	}
	return nil
}

// commit applies the binder's changes to stable state: first every step
// that can fail (parameter changes), undone in reverse if one fails; then
// the steps that cannot fail.
func (b *binder) commit() error {
	if h := b.k.hooks; h != nil && h.beforeCommit != nil {
		h.beforeCommit()
	}
	if ns := b.liveNS; ns != nil {
		// No entry is created with the old rule while it changes.
		ns.insertMu.Lock()
		defer ns.insertMu.Unlock()
	}
	var undo []func()
	fail := func(field string, err error) error {
		for _, u := range slices.Backward(undo) {
			u()
		}
		b.probs.add(field, "reconfigure failed: "+err.Error())
		return b.probs.err()
	}
	reconfigure := func(st *state, to spi.Params, field string) error {
		from := st.params
		if err := st.lim.Reconfigure(b.now, to); err != nil {
			return fail(field, err)
		}
		// Best effort on undo: the old parameters were valid a moment ago.
		undo = append(undo, func() { _ = st.lim.Reconfigure(b.now, from) })
		return nil
	}
	for _, ch := range b.changes {
		if err := reconfigure(ch.st, ch.new, ch.field); err != nil {
			return err
		}
	}
	var entryErr error
	for slot, change := range b.nsPlan {
		if entryErr != nil || b.liveNS == nil {
			break
		}
		to := b.nsDesc.spec.params[slot]
		switch {
		case change == nsReconfigure:
			b.liveNS.eachEntry(func(e *partEntry) {
				if entryErr == nil {
					entryErr = reconfigure(e.states.Load().s[slot], to, "Partition.Rule")
				}
			})
		case change == nsAdd && slot == 0:
			// A concurrency limit re-added finds the parked state
			// that the entry's holders still occupy.
			b.liveNS.eachEntry(func(e *partEntry) {
				if p := e.states.Load().parked; entryErr == nil && p != nil && p.kind.Name() == b.nsDesc.spec.kinds[0].Name() && !p.params.Equal(to) {
					entryErr = reconfigure(p, to, "Partition.Rule")
				}
			})
		}
	}
	if entryErr != nil {
		return entryErr
	}

	// Nothing below can fail.
	for _, ch := range b.changes {
		ch.st.params = ch.new
	}
	if ns := b.liveNS; ns != nil {
		b.commitNamespace(ns)
	}
	if b.newNS != nil {
		b.k.spaces = append(b.k.spaces, b.newNS)
	}
	for _, h := range b.handovers {
		handOver(h.from, h.to, b.now)
	}
	for _, st := range b.created {
		b.k.registry[st.key] = st
		if st.class == spi.ClassConcurrency {
			b.k.concHead[st.key.scope] = st
		}
	}
	return nil
}

// handOver makes to the successor of from at now (see handover).
func handOver(from, to *state, now time.Time) {
	if from.class == spi.ClassConcurrency {
		takeOver(from, to)
		return
	}
	// The successor inherits before any request can be redirected to it:
	// a request that meets the sealed predecessor in between is refused
	// (too strict for an instant, never too loose).
	usage := from.lim.(spi.Handover).Seal(now)
	to.lim.(spi.Inheritor).Inherit(now, usage)
	from.succ.Store(to)
}

// commitNamespace applies the live targets and the per-partition rule to a
// namespace that the new program keeps. ns.insertMu held.
//
// A publication that leaves the per-partition rule as it is visits no
// entry: it costs the same at 0 and a million keys (issue 37 measured an
// unrelated method's limit change at 37 ms and one allocation per key at
// 300k keys). Only a change of the rule visits the entries.
func (b *binder) commitNamespace(ns *namespace) {
	d := b.nsDesc
	ns.max.Store(int64(d.policy.MaxPartitions))
	ns.idle.Store(int64(d.policy.IdleTimeout))
	ns.lastSweep.Store(0) // the next new key sweeps under the new targets
	if b.nsPlan == (nsPlan{}) {
		ns.spec.Store(d.spec)
		return
	}
	ns.eachEntry(func(e *partEntry) {
		old := e.states.Load()
		next := *old
		if next.parked != nil && e.pins.Load() == 0 {
			// No request routes to it any more (see entryStates).
			next.parked = nil
		}
		for slot, change := range b.nsPlan {
			switch change {
			case nsAdd:
				next.s[slot] = b.addEntryState(ns, e, &next, slot)
			case nsRemove:
				if slot == 0 {
					next.parked = old.s[slot]
				}
				next.s[slot] = nil
			case nsReconfigure:
				old.s[slot].params = d.spec.params[slot]
				b.woken = append(b.woken, old.s[slot]) // its limit may have grown
			case nsHandover:
				from := old.s[slot]
				to := ns.newEntryState(e, d.spec.kinds[slot], d.spec.params[slot], b.now)
				if slot == 0 {
					to.carry = &carry{from: from}
				}
				handOver(from, to, b.now)
				b.woken = append(b.woken, from)
				next.s[slot] = to
			}
		}
		if next != *old {
			e.states.Store(&next)
		}
	})
	ns.spec.Store(d.spec)
}

// addEntryState returns the state of a limit added to entry e's rule at
// slot: for concurrency the parked state of an earlier removal (reused for
// the same kind, succeeded for another), else a new one.
func (b *binder) addEntryState(ns *namespace, e *partEntry, next *entryStates, slot int) *state {
	d := b.nsDesc
	p := next.parked
	if slot != 0 || p == nil {
		return ns.newEntryState(e, d.spec.kinds[slot], d.spec.params[slot], b.now)
	}
	next.parked = nil
	if p.kind.Name() == d.spec.kinds[0].Name() {
		p.params = d.spec.params[0]
		b.woken = append(b.woken, p) // its limit may have grown
		return p
	}
	to := ns.newEntryState(e, d.spec.kinds[0], d.spec.params[0], b.now)
	to.carry = &carry{from: p}
	handOver(p, to, b.now)
	b.woken = append(b.woken, p)
	return to
}

// sweepLocked drops drained programs from the live list, and states and
// namespaces that nothing needs any more. k.mu held.
//
// A state no unreclaimed program binds has no holders and no waiters (both
// keep their program's lease). It is still kept while dropping it would
// change what a later program admits: a concurrency state that counts a
// replaced predecessor's holders; the rate lineage (and the partition
// namespace) that the next Enable continues, until its consumed quota no
// longer counts (a fresh limiter would be no different). Once sealed and
// drained (final), nothing is kept.
func (k *Kernel) sweepLocked() {
	k.programs = slices.DeleteFunc(k.programs, func(p *program) bool {
		g := k.cell.Load()
		current := g != nil && g.Value() == p
		return !current && p.drained()
	})
	final := k.sealed.Load() && k.live.Load() == 0
	now := k.clock.Now()
	needed := func(st *state) bool {
		switch {
		case st.refs.Load() != 0:
			return true
		case final:
			return false
		case st.class == spi.ClassConcurrency:
			return st.carried()
		}
		return k.lastRate[st.key.scope] == st && !st.atRest(now)
	}
	// A state that is kept keeps its successors: requests that route to
	// it are charged down the chain (state.current), so the chain's end
	// must stay the scope's state, never be replaced by an unrelated one.
	keep := make(map[*state]bool, len(k.registry))
	for _, st := range k.registry {
		if !keep[st] && needed(st) {
			for s := st; s != nil && !keep[s]; s = s.succ.Load() {
				keep[s] = true
			}
		}
	}
	maps.DeleteFunc(k.registry, func(_ stateKey, st *state) bool { return !keep[st] })
	maps.DeleteFunc(k.lastRate, func(_ Scope, st *state) bool { return k.registry[st.key] != st })
	maps.DeleteFunc(k.concHead, func(_ Scope, st *state) bool { return k.registry[st.key] != st })
	k.spaces = slices.DeleteFunc(k.spaces, func(ns *namespace) bool {
		return ns.refs.Load() == 0 && (final || ns != k.lastNS || ns.atRest(now))
	})
	if k.lastNS != nil && !slices.Contains(k.spaces, k.lastNS) {
		k.lastNS = nil
	}
}

// atRest reports whether the rate state st counts no consumed quota at
// now: a fresh limiter of its kind would behave the same.
func (st *state) atRest(now time.Time) bool {
	return st.succ.Load() != nil || st.lim.Snapshot(now).InUse <= 0
}

// sortedStates returns the registry's states in a stable order. k.mu held.
func (k *Kernel) sortedStates() []*state {
	out := slices.Collect(maps.Values(k.registry))
	slices.SortFunc(out, func(a, b *state) int {
		if a.name != b.name {
			if a.name < b.name {
				return -1
			}
			return 1
		}
		return int(a.key.lineage) - int(b.key.lineage)
	})
	return out
}
