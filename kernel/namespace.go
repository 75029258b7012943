package kernel

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicerpc/sluice/spi"
)

// nsKey is a partition namespace's identity: its selector's name and
// version.
type nsKey struct {
	name    string
	version uint64
}

// partSpec is the per-partition rule of a namespace, by class slot
// (0 concurrency, 1 rate); a nil kind means no limit of that class.
type partSpec struct {
	kinds  [2]spi.LimiterKind
	params [2]spi.Params
}

// namespace is the stable state of one selector identity: its entries and
// its live MaxPartitions and IdleTimeout targets. Programs bind it like a
// state (refs) and it is reclaimed when none does.
type namespace struct {
	key  nsKey
	name string // "partition:tenant@v1"
	refs atomic.Int64

	max  atomic.Int64 // MaxPartitions, a live target
	idle atomic.Int64 // IdleTimeout in nanoseconds

	// spec is the current per-partition rule; new entries are built
	// from it. Replaced under insertMu at publication.
	spec atomic.Pointer[partSpec]

	entries *partMap
	def     *partEntry // the default partition: never counted, never reclaimed
	count   atomic.Int64

	// insertMu serializes the creation and the reclaim of entries (the
	// new-key path and the control path, never a lookup).
	insertMu  sync.Mutex
	lastSweep atomic.Int64  // when the last reclaim pass began
	sweeps    atomic.Uint64 // PartitionStats.Sweeps: passes begun
	// sweeping says that a reclaim pass is under way: every new key
	// continues it from cursor (insertMu held) by one bounded step.
	sweeping atomic.Bool
	cursor   partCursor

	// refusals counts the requests refused in the namespace, by reason:
	// partition_capacity, and the refusals of every entry's states
	// (PartitionStats.Refusals).
	refusals [reasonCount]atomic.Uint64
}

// partEntry is one partition: its states and its activity.
type partEntry struct {
	ns        *namespace
	key       string
	isDefault bool
	// pins counts requests admitting, waiting or holding under this
	// entry; -1 once reclaimed.
	pins    atomic.Int64
	lastUse atomic.Int64 // unix nanoseconds of the last admission (pin)
	states  atomic.Pointer[entryStates]
}

type entryStates struct {
	s [2]*state // concurrency, rate
	// parked is the concurrency state of a rule that a later program
	// removed while requests of the entry were active: re-adding a
	// concurrency limit finds it again, so its holders still count. The
	// next publication that changes the rule drops it once the entry has
	// no active request (until then it is kept: reused with no holders,
	// it counts nothing, as a new state would).
	parked *state
}

func newNamespace(key nsKey, max int64, idle time.Duration, spec *partSpec, now time.Time) *namespace {
	ns := &namespace{key: key, name: fmt.Sprintf("partition:%s@v%d", key.name, key.version), entries: newPartMap()}
	ns.max.Store(max)
	ns.idle.Store(int64(idle))
	ns.spec.Store(spec)
	ns.lastSweep.Store(now.UnixNano())
	ns.def = ns.newEntry("", true, spec, now)
	return ns
}

func (ns *namespace) newEntry(key string, isDefault bool, spec *partSpec, now time.Time) *partEntry {
	e := &partEntry{ns: ns, key: key, isDefault: isDefault}
	e.lastUse.Store(now.UnixNano())
	es := &entryStates{}
	for slot, kind := range spec.kinds {
		if kind != nil {
			es.s[slot] = ns.newEntryState(e, kind, spec.params[slot], now)
		}
	}
	e.states.Store(es)
	return e
}

func (ns *namespace) newEntryState(e *partEntry, kind spi.LimiterKind, params spi.Params, now time.Time) *state {
	lim, err := kind.New(params, now)
	if err != nil {
		// Validate accepted these parameters: the kind broke its contract.
		panic(fmt.Sprintf("kernel: limiter kind %q failed New after Validate: %v", kind.Name(), err))
	}
	label := "[" + e.key + "]"
	if e.isDefault {
		label = "(default)"
	}
	return &state{
		ns:     ns,
		key:    stateKey{class: kind.Class()},
		name:   ns.name + label + "/" + kind.Class().String(),
		kind:   kind,
		class:  kind.Class(),
		lim:    lim,
		params: params,
	}
}

// pin returns the entry of key (the default entry when isDefault), pinned
// for the caller, creating it if needed. It returns nil when the key is new
// and the namespace is at MaxPartitions even after reclaiming idle entries.
// Existing keys are found lock-free and without allocating.
func (ns *namespace) pin(key string, isDefault bool, now time.Time) *partEntry {
	if isDefault {
		ns.def.pins.Add(1)
		ns.def.lastUse.Store(now.UnixNano())
		return ns.def
	}
	for {
		if e := ns.entries.load(key); e != nil {
			if e.tryPin(now) {
				return e
			}
			// Being reclaimed: the sweeper removes it under insertMu.
			runtime.Gosched()
			continue
		}
		e, ok := ns.create(key, now)
		if !ok {
			return nil
		}
		return e
	}
}

// fullSweepsPerIdle bounds the reclaim sweeps a full namespace makes for
// new keys: at most this many per IdleTimeout. A sweep visits every entry;
// a peer sending new keys to a full namespace made one per request
// (issue 37: 9.5 ms per refused request at 300k keys). An entry that
// becomes reclaimable is reclaimed at most IdleTimeout/16 later than it
// could be; a publication that sets MaxPartitions or IdleTimeout lets the
// next new key sweep at once.
const fullSweepsPerIdle = 16

// create pins the entry of key, making it if it is new. It returns false
// when the key is new and the namespace is at capacity.
func (ns *namespace) create(key string, now time.Time) (*partEntry, bool) {
	if ns.fullUntilSweep(now) {
		return nil, false
	}
	ns.insertMu.Lock()
	defer ns.insertMu.Unlock()
	if e := ns.entries.load(key); e != nil && e.tryPin(now) {
		return e, true
	}
	if ns.reclaimDue(now) {
		ns.sweepStepLocked(now)
	}
	if ns.count.Load() >= ns.max.Load() {
		return nil, false
	}
	e := ns.newEntry(key, false, ns.spec.Load(), now)
	e.pins.Store(1)
	ns.entries.insert(key, e)
	ns.count.Add(1)
	return e, true
}

// reclaimDue reports, lock-free, that a reclaim pass is under way, or due:
// IdleTimeout after the previous one began, or IdleTimeout/16 when the
// namespace is full.
func (ns *namespace) reclaimDue(now time.Time) bool {
	idle := ns.idle.Load()
	since := now.UnixNano() - ns.lastSweep.Load()
	return ns.sweeping.Load() || since >= idle || ns.count.Load() >= ns.max.Load() && since >= idle/fullSweepsPerIdle
}

// reclaimPass runs the reclaim pass that is under way or due to its end,
// one step at a time, taking insertMu for each step only: new keys are
// made between two steps. It returns the entries reclaimed, or stops
// between two steps when ctx ends.
func (ns *namespace) reclaimPass(ctx context.Context, now func() time.Time) int {
	reclaimed := 0
	for ctx.Err() == nil {
		ns.insertMu.Lock()
		t := now()
		if !ns.reclaimDue(t) {
			ns.insertMu.Unlock()
			return reclaimed
		}
		reclaimed += ns.sweepStepLocked(t)
		more := ns.sweeping.Load()
		ns.insertMu.Unlock()
		if !more {
			return reclaimed
		}
	}
	return reclaimed
}

// fullUntilSweep reports, without a lock, that the namespace is at
// MaxPartitions and no reclaim pass is under way or due (see create): a new key is then
// refused in O(1), never queued behind insertMu with the keys being made
// or the sweep. A key created concurrently may be refused by a request
// that read the map just before it appeared, as if that request had come
// first.
func (ns *namespace) fullUntilSweep(now time.Time) bool {
	if ns.count.Load() < ns.max.Load() {
		return false
	}
	idle := ns.idle.Load()
	return !ns.sweeping.Load() && now.UnixNano()-ns.lastSweep.Load() < idle/fullSweepsPerIdle
}

// sweepStepBudget bounds the entries one step of a reclaim pass visits:
// the reclaim work a single new key pays (issue 37: a sweep visiting every
// entry cost the request that made it 43 ms at 10k keys).
const sweepStepBudget = 256

// sweepStepLocked makes one step of the reclaim pass, beginning one if
// none is under way: it visits at most about sweepStepBudget entries from
// the cursor and reclaims those that have no active request, have been
// idle for IdleTimeout (judged by their own last-use time), and whose rate
// state counts no consumed quota any more: a new entry of the key would be
// no different, so reclaiming it is no free burst. A pass over N entries
// takes N/sweepStepBudget new keys (or one Kernel.ReclaimIdle); each is
// judged at the step that visits it. It returns the entries reclaimed.
// ns.insertMu held.
func (ns *namespace) sweepStepLocked(now time.Time) int {
	if !ns.sweeping.Load() {
		ns.lastSweep.Store(now.UnixNano())
		ns.sweeps.Add(1)
		ns.cursor = partCursor{}
		ns.sweeping.Store(true)
	}
	idle := ns.idle.Load()
	visited, reclaimed := 0, 0
	next, done := ns.entries.walk(ns.cursor, sweepStepBudget, func(e *partEntry) {
		visited++
		if e.pins.Load() == 0 && now.UnixNano()-e.lastUse.Load() >= idle && e.atRest(now) && e.pins.CompareAndSwap(0, -1) {
			ns.entries.remove(e.key, e)
			ns.count.Add(-1)
			reclaimed++
		}
	})
	ns.cursor = next
	if done {
		ns.sweeping.Store(false)
	}
	if testHookSweepStep != nil {
		testHookSweepStep(visited)
	}
	return reclaimed
}

// testHookSweepStep, if set, is called with the entries each reclaim step
// visited.
var testHookSweepStep func(visited int)

func (e *partEntry) tryPin(now time.Time) bool {
	for {
		n := e.pins.Load()
		if n < 0 {
			return false
		}
		if e.pins.CompareAndSwap(n, n+1) {
			e.lastUse.Store(now.UnixNano())
			return true
		}
	}
}

// unpin ends one request's use of the entry. The entry's last use stays
// the admission that pinned it: that is when its rate quota was last
// taken, and an entry is reclaimed only once it has no active request, so
// release reads no clock.
func (e *partEntry) unpin() { e.pins.Add(-1) }

// atRest reports whether the entry's rate state (if any) counts no consumed
// quota at now.
func (e *partEntry) atRest(now time.Time) bool {
	st := e.states.Load().s[1]
	return st == nil || st.atRest(now)
}

// atRest reports whether no entry of ns counts consumed rate quota at now.
func (ns *namespace) atRest(now time.Time) bool {
	rest := true
	ns.eachEntry(func(e *partEntry) { rest = rest && e.atRest(now) })
	return rest
}

// eachEntry calls f for the default entry and every keyed entry.
func (ns *namespace) eachEntry(f func(*partEntry)) {
	f(ns.def)
	ns.entries.each(f)
}
