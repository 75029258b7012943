package kernel

import (
	"slices"
	"sync/atomic"
	"time"
)

// Stats is a consistent view of the kernel for tests, metrics and the demo.
// Building it takes the kernel's control and queue locks (never a request's
// lock-free path) and reclaims drained programs and unbound states first.
type Stats struct {
	Generation uint64
	Enabled    bool
	Sealed     bool
	// LivePrograms counts published programs that have not drained: the
	// current one and retired ones still captured by a waiter or holder.
	LivePrograms int64
	// States counts states in the registry.
	States int
	// QueuedCalls and QueuedBytes are the one shared queue accounting.
	QueuedCalls int
	QueuedBytes int64
	// DoubleReleases counts Release calls on already released permits.
	DoubleReleases uint64
	// Scopes describes every state, sorted by name.
	Scopes []ScopeStats
	// Partitions describes every live partition namespace.
	Partitions []PartitionStats
}

// PartitionStats describes one partition namespace: figures kept as they
// change and the default partition, read in O(1) whatever the number of
// keys. The keyed entries are read one key at a time
// (Kernel.PartitionEntry) or a bounded page at a time
// (Kernel.PartitionEntries), never all at once.
type PartitionStats struct {
	Name        string // "partition:tenant@v1"
	Keys        int64  // keyed entries (the default partition is not counted)
	Max         int64
	IdleTimeout time.Duration
	Programs    int64 // unreclaimed programs binding the namespace
	// Sweeps counts the idle-reclaim passes begun so far; a pass visits
	// every entry, in steps of at most about 256 made by the new keys
	// that arrive while it is under way (no request pays for more). A
	// full namespace begins at most 16 passes per IdleTimeout, however
	// many new keys it refuses.
	Sweeps uint64
	// Refusals counts the requests refused in the namespace by reason:
	// partition_capacity, and what every entry's limits refused; nil
	// when none.
	Refusals map[string]uint64
	// Default is the default partition.
	Default PartitionEntryStats
}

// PartitionEntryStats describes one partition.
type PartitionEntryStats struct {
	Key     string
	Default bool
	Active  int64 // requests admitting, waiting or holding
	LastUse time.Time
	Limits  []ScopeStats
}

// Partition returns the stats of the named namespace (the newest one when
// two live namespaces share a name), and whether it exists.
func (s Stats) Partition(name string) (PartitionStats, bool) {
	for i := len(s.Partitions) - 1; i >= 0; i-- {
		if s.Partitions[i].Name == name {
			return s.Partitions[i], true
		}
	}
	return PartitionStats{}, false
}

// ScopeStats describes one state.
type ScopeStats struct {
	Name      string // for example "global/concurrency"
	Kind      string
	Limit     int64
	InUse     int64
	Available int64
	Waiters   int
	Programs  int64 // unreclaimed programs binding the state
	// Refusals counts the requests the state refused since it was
	// created, by reason ("concurrency", "rate", "queue_full",
	// "queue_timeout"); nil when none. A state lives as long as a
	// program binds it or a request holds it: a reclaimed scope's count
	// starts again from zero with its next state.
	Refusals map[string]uint64
}

// Stats returns the kernel's current figures.
func (k *Kernel) Stats() Stats {
	k.mu.Lock()
	k.sweepLocked()
	s := Stats{
		Generation:     k.gen.Load(),
		Enabled:        k.enabled,
		Sealed:         k.sealed.Load(),
		LivePrograms:   k.live.Load(),
		States:         len(k.registry),
		DoubleReleases: k.doubleReleases.Load(),
	}
	states := k.sortedStates()
	spaces := slices.Clone(k.spaces)
	k.mu.Unlock()

	now := k.clock.Now()
	k.qmu.Lock()
	s.QueuedCalls, s.QueuedBytes = k.queuedCalls, k.queuedBytes
	for _, st := range states {
		s.Scopes = append(s.Scopes, st.stats(now))
	}
	k.qmu.Unlock()
	// The namespaces' figures are read without the queue lock, which
	// requests that wait need: each is an atomic of its own, and none is
	// per key.
	for _, ns := range spaces {
		s.Partitions = append(s.Partitions, ns.stats(now))
	}
	return s
}

func (st *state) stats(now time.Time) ScopeStats {
	snap := st.lim.Snapshot(now)
	return ScopeStats{
		Name: st.name, Kind: st.kind.Name(),
		Limit: snap.Limit, InUse: snap.InUse, Available: snap.Available,
		Waiters: int(st.waiting.Load()), Programs: st.refs.Load(),
		Refusals: refusalCounts(&st.refusals),
	}
}

// refusalCounts reads counters by reason; nil when all are zero.
func refusalCounts(c *[reasonCount]atomic.Uint64) map[string]uint64 {
	var m map[string]uint64
	for r := range c {
		if n := c[r].Load(); n > 0 {
			if m == nil {
				m = map[string]uint64{}
			}
			m[Reason(r).String()] = n
		}
	}
	return m
}

func (ns *namespace) stats(now time.Time) PartitionStats {
	return PartitionStats{
		Name: ns.name, Keys: ns.count.Load(), Max: ns.max.Load(),
		IdleTimeout: time.Duration(ns.idle.Load()), Programs: ns.refs.Load(),
		Sweeps:   ns.sweeps.Load(),
		Refusals: refusalCounts(&ns.refusals),
		Default:  ns.def.stats(now),
	}
}

func (e *partEntry) stats(now time.Time) PartitionEntryStats {
	es := PartitionEntryStats{Key: e.key, Default: e.isDefault, Active: max(e.pins.Load(), 0), LastUse: time.Unix(0, e.lastUse.Load())}
	for _, st := range e.states.Load().s {
		if st != nil {
			es.Limits = append(es.Limits, st.stats(now))
		}
	}
	return es
}

// Scope returns the stats of the named state, and whether it exists.
func (s Stats) Scope(name string) (ScopeStats, bool) {
	for _, sc := range s.Scopes {
		if sc.Name == name {
			return sc, true
		}
	}
	return ScopeStats{}, false
}
