package kernel

import "github.com/sluicerpc/sluice/spi"

// Hooks exposes the interleaving points to the black-box tests.
type Hooks struct {
	AfterCapture func(*Permit)
	AfterPrepare func()
	BeforeCommit func()
	AfterEnqueue func(*Permit)
	AfterRelease func(*Permit)
}

// SetHooks installs h (nil removes them). Call it before traffic starts.
func (k *Kernel) SetHooks(h *Hooks) {
	if h == nil {
		k.hooks = nil
		return
	}
	k.hooks = &hooks{
		afterCapture: h.AfterCapture,
		afterPrepare: h.AfterPrepare,
		beforeCommit: h.BeforeCommit,
		afterEnqueue: h.AfterEnqueue,
		afterRelease: h.AfterRelease,
	}
}

// HoldsPartitionUnit reports whether the granted permit holds a unit of
// its partition entry's concurrency state (for stress checkers: a request
// admitted while its entry had no concurrency limit holds none).
func (p *Permit) HoldsPartitionUnit() bool {
	if p.entry == nil || !p.Granted() {
		return false
	}
	r := p.route
	for i := 0; i < r.n; i++ {
		if st := r.states[i]; st.key.scope.Kind == 0 && st.class == spi.ClassConcurrency {
			return true
		}
	}
	return false
}

// SetAfterLinkHook installs f inside every concurrency handover, after the
// predecessor is linked and before its occupancy is read (nil removes it).
// Not safe while publications run.
func SetAfterLinkHook(f func()) { testHookAfterLink = f }

// SetEntryStatsHook installs f before Stats reads each partition entry
// (nil removes it). Not safe while Stats runs.
func SetEntryStatsHook(f func()) { testHookEntryStats = f }

// SetSweepStepHook installs f, called with the entries each step of a
// partition namespace's reclaim pass visited (nil removes it).
func SetSweepStepHook(f func(visited int)) { testHookSweepStep = f }
