package kernel

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
	k.mu.Unlock()

	now := k.clock.Now()
	k.qmu.Lock()
	s.QueuedCalls, s.QueuedBytes = k.queuedCalls, k.queuedBytes
	for _, st := range states {
		snap := st.lim.Snapshot(now)
		s.Scopes = append(s.Scopes, ScopeStats{
			Name: st.name, Kind: st.kind.Name(),
			Limit: snap.Limit, InUse: snap.InUse, Available: snap.Available,
			Waiters: int(st.waiting.Load()), Programs: st.refs.Load(),
		})
	}
	k.qmu.Unlock()
	return s
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
