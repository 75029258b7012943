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
}

type paramChange struct {
	st       *state
	old, new spi.Params
	field    string
}

// handover replaces the algorithm of a rate scope: from's usage becomes a
// barrier in to, and from's later acquisitions are redirected to to.
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
	}
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
	wake := make([]*state, 0, len(b.changes)+len(b.handovers))
	for _, ch := range b.changes {
		wake = append(wake, ch.st)
	}
	for _, h := range b.handovers {
		wake = append(wake, h.from)
	}
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

func (b *binder) bindConcurrency(d stateDesc) *state {
	st := b.k.registry[d.key]
	switch {
	case st == nil:
		return b.newState(d, 0)
	case st.kind.Name() != d.kind.Name():
		b.probs.add(d.field+".Kind", fmt.Sprintf("cannot replace concurrency limiter kind %q with %q while earlier programs still use its state; disable, let it drain, then enable", st.kind.Name(), d.kind.Name()))
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

// commit applies the binder's changes to stable state.
func (b *binder) commit() error {
	if h := b.k.hooks; h != nil && h.beforeCommit != nil {
		h.beforeCommit()
	}
	for i, ch := range b.changes {
		if err := ch.st.lim.Reconfigure(b.now, ch.new); err != nil {
			for _, done := range slices.Backward(b.changes[:i]) {
				// Best effort: the old parameters were valid a moment ago.
				_ = done.st.lim.Reconfigure(b.now, done.old)
			}
			b.probs.add(ch.field, "reconfigure failed: "+err.Error())
			return b.probs.err()
		}
	}
	for _, ch := range b.changes {
		ch.st.params = ch.new
	}
	for _, h := range b.handovers {
		// The successor inherits before any request can be redirected
		// to it: a request that meets the sealed predecessor in between
		// is refused (too strict for an instant, never too loose).
		usage := h.from.lim.(spi.Handover).Seal(b.now)
		h.to.lim.(spi.Inheritor).Inherit(b.now, usage)
		h.from.succ.Store(h.to)
	}
	for _, st := range b.created {
		b.k.registry[st.key] = st
	}
	return nil
}

// sweepLocked drops drained programs from the live list and states that no
// unreclaimed program binds. k.mu held.
func (k *Kernel) sweepLocked() {
	k.programs = slices.DeleteFunc(k.programs, func(p *program) bool {
		g := k.cell.Load()
		current := g != nil && g.Value() == p
		return !current && p.drained()
	})
	maps.DeleteFunc(k.registry, func(_ stateKey, st *state) bool { return st.refs.Load() == 0 })
	maps.DeleteFunc(k.lastRate, func(_ Scope, st *state) bool { return st.refs.Load() == 0 })
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
