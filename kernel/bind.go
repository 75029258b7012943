package kernel

import (
	"fmt"
	"maps"
	"slices"

	"github.com/sluicerpc/sluice/spi"
)

// bind resolves a prepared candidate against the registry and commits its
// changes to stable state. It runs inside the publication section (k.mu
// held). Existing states are reused by key; a state whose parameters change
// is reconfigured in place (prepare/commit: a failure rolls back every
// change made so far, and removes the states bind created). It returns the
// program (not yet published) and the states whose waiters should be
// re-examined.
func (k *Kernel) bind(c *candidate) (*program, []*state, error) {
	k.sweepLocked()
	now := k.clock.Now()

	bound := make([]*state, len(c.descs))
	var created []*state
	type change struct {
		st       *state
		old, new spi.Params
	}
	var changes []change
	var probs problems
	for i, d := range c.descs {
		st := k.registry[d.key]
		switch {
		case st == nil:
			st = &state{
				key:    d.key,
				name:   scopeName(k.cat, d.key.scope) + "/" + d.key.class.String(),
				kind:   d.kind,
				class:  d.key.class,
				lim:    d.spare,
				params: d.spec.Params,
			}
			created = append(created, st)
		case st.kind.Name() != d.kind.Name():
			probs.add(d.field+".Kind", fmt.Sprintf("cannot replace %s limiter kind %q with %q while earlier programs still use its state; disable, let it drain, then enable", d.key.class, st.kind.Name(), d.kind.Name()))
		case !st.params.Equal(d.spec.Params):
			changes = append(changes, change{st: st, old: st.params, new: d.spec.Params})
		}
		bound[i] = st
	}
	if err := probs.err(); err != nil {
		return nil, nil, err
	}

	if h := k.hooks; h != nil && h.beforeCommit != nil {
		h.beforeCommit()
	}
	for i, ch := range changes {
		if err := ch.st.lim.Reconfigure(now, ch.new); err != nil {
			for _, done := range slices.Backward(changes[:i]) {
				// Best effort: the old parameters were valid a moment ago.
				_ = done.st.lim.Reconfigure(now, done.old)
			}
			probs.add(c.descs[slices.Index(bound, ch.st)].field, "reconfigure failed: "+err.Error())
			return nil, nil, probs.err()
		}
		ch.st.params = ch.new
	}
	for _, st := range created {
		k.registry[st.key] = st
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
	grown := make([]*state, 0, len(changes))
	for _, ch := range changes {
		grown = append(grown, ch.st)
	}
	return p, grown, nil
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
}

// sortedStates returns the registry's states in a stable order. k.mu held.
func (k *Kernel) sortedStates() []*state {
	out := slices.Collect(maps.Values(k.registry))
	slices.SortFunc(out, func(a, b *state) int {
		if a.name < b.name {
			return -1
		}
		if a.name > b.name {
			return 1
		}
		return 0
	})
	return out
}
