package window

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicerpc/sluice/spi"
)

// Fixed is a fixed-window rate limiter: it admits up to a permit limit per
// window, windows being aligned to the limiter's origin (its creation time,
// or the publication of a window-length change): window k is
// [origin + k*W, origin + (k+1)*W), and the count starts again at 0 at each
// boundary. Usage it cannot map onto its windows (inherited from another
// algorithm, or left by a window-length change) counts as barriers until
// explicit instants. The zero value is not usable; use NewFixed or
// FixedKind.New.
//
// The immediate path takes no lock and allocates nothing. The parameters,
// origin and barriers live in an immutable configuration reached through one
// atomic pointer; the mutable state is a single 64-bit word inside it, the
// count in the high 32 bits and the window index (modulo 2^32) in the low
// 32 bits, changed by compare-and-swap, so every grant is checked against
// the count and window it replaces. A second word, hi, records the largest
// window index ever written (stored before the word), from which the full
// index of the word is recovered: an index that wrapped modulo 2^32 is never
// mistaken for the current window, and a caller whose clock reading is a
// little behind the latest one is counted in the latest window instead of
// reopening an older one.
//
// Reconfigure, Seal and Inherit are the control path: the kernel serializes
// them (Fixed also does, with a mutex the immediate path never touches).
// They swap a sentinel into the word, which freezes it for good, compute the
// new state from the frozen one, and publish a new configuration. A
// TryAcquire or Cancel that meets the sentinel reloads the configuration and
// retries, so no grant can be lost between the freeze and the publication.
type Fixed struct {
	cfg atomic.Pointer[fixedConfig]
	ctl sync.Mutex // serializes the control path
}

var (
	_ spi.Limiter   = (*Fixed)(nil)
	_ spi.Handover  = (*Fixed)(nil)
	_ spi.Inheritor = (*Fixed)(nil)
)

// fixedFrozen is the word of a configuration that was replaced: no valid
// state has a count of 2^32-1 (the limit is below 2^31).
const fixedFrozen = ^uint64(0)

func packFixed(count, win int64) uint64 { return uint64(count)<<32 | uint64(uint32(win)) }

// fixedConfig is one immutable configuration and the state word that
// belongs to it.
type fixedConfig struct {
	limit  int64
	window time.Duration
	grid   grid // step = window
	bars   barriers

	// sealed configurations refuse everything; they keep the state
	// frozen at Seal for Snapshot.
	sealed      bool
	sealedCount int64
	sealedWin   int64

	word atomic.Uint64 // count<<32 | uint32(window index), or fixedFrozen
	hi   atomic.Int64  // largest window index ever stored in word
}

func newFixedConfig(limit int64, window time.Duration, origin time.Time, bars []barrier) *fixedConfig {
	return &fixedConfig{
		limit:  limit,
		window: window,
		grid:   grid{origin: origin, step: int64(window)},
		bars:   makeBarriers(bars),
	}
}

// NewFixed returns an empty fixed window admitting limit units per window,
// aligned to now. It panics if limit or window is out of range (see
// FixedKind.Validate); FixedKind.New returns the error instead.
func NewFixed(limit int64, window time.Duration, now time.Time) *Fixed {
	if _, _, err := fixedParams(FixedSpec(limit, window).Params); err != nil {
		panic("window: " + err.Error())
	}
	return newFixed(limit, window, now)
}

func newFixed(limit int64, window time.Duration, now time.Time) *Fixed {
	f := &Fixed{}
	f.cfg.Store(newFixedConfig(limit, window, now, nil))
	return f
}

// fixedView is the state as it counts at one instant.
type fixedView struct {
	win   int64     // the window in force
	count int64     // the units counted in it
	at    time.Time // the instant: now, or the start of win for a caller behind it
}

// decode returns the count and the full window index of a state word. It
// loads hi after w was loaded, and hi is raised before any word is stored,
// so the index is the largest value <= hi congruent to w modulo 2^32.
func (c *fixedConfig) decode(w uint64) (count, win int64) {
	hi := c.hi.Load()
	return int64(w >> 32), hi - int64(uint32(hi)-uint32(w))
}

// view returns the state (count in window win) as it counts at now. A
// window that is over counts nothing; a caller whose clock is behind the
// state's window (or the origin) is treated as arriving at its start.
func (c *fixedConfig) view(now time.Time, count, win int64) fixedView {
	k, before := c.grid.locate(now)
	switch {
	case win < k:
		return fixedView{win: k, at: now}
	case win > k || before:
		return fixedView{win: win, count: count, at: c.grid.at(win)}
	}
	return fixedView{win: win, count: count, at: now}
}

// instant returns the instant a caller at now is treated as arriving at in
// window win: now, or the start of win for a caller behind it.
func (c *fixedConfig) instant(now time.Time, win int64, behind bool) time.Time {
	if behind {
		return c.grid.at(win)
	}
	return now
}

func (c *fixedConfig) sealedView(now time.Time) fixedView {
	return c.view(now, c.sealedCount, c.sealedWin)
}

// used returns the units counting at v.at: the window's count and the
// active barriers.
func (c *fixedConfig) used(v fixedView) int64 {
	return satAdd(v.count, c.bars.activeAt(v.at))
}

// retryAt returns the earliest instant at which n units fit, if nothing
// else happens: usage only falls when the window ends or a barrier
// expires, so it is one of those instants.
func (c *fixedConfig) retryAt(v fixedView, n int64) time.Time {
	need := c.limit - n // usage must fall to need
	end := c.grid.at(v.win + 1)
	own := v.count
	b := &c.bars
	i := b.firstActive(v.at)
	for {
		var t time.Time
		switch {
		case own > 0 && (i == len(b.list) || !b.list[i].until.Before(end)):
			t = end
		case i < len(b.list):
			t = b.list[i].until
		default:
			return v.at // nothing counts any more; unreachable for a refusal
		}
		if own > 0 && !end.After(t) {
			own = 0
		}
		for i < len(b.list) && !b.list[i].until.After(t) {
			i++
		}
		if satAdd(own, b.from(i)) <= need {
			return t
		}
	}
}

// raiseHi makes hi at least win.
func (c *fixedConfig) raiseHi(win int64) {
	for {
		h := c.hi.Load()
		if h >= win || c.hi.CompareAndSwap(h, win) {
			return
		}
	}
}

// TryAcquire takes n units if the window's count, the active barriers and n
// fit the permit limit. A refusal says when n units will fit if nothing
// else happens (the exact instant), or HintNever if n exceeds the limit or
// the limiter is sealed. n == 0 is always granted; n < 0 panics.
func (f *Fixed) TryAcquire(now time.Time, n int64) spi.Decision {
	if n <= 0 {
		if n == 0 {
			return spi.Grant()
		}
		panic(fmt.Sprintf("window: acquire of negative units %d", n))
	}
	for {
		c := f.cfg.Load()
		if c.sealed || n > c.limit {
			return spi.RefuseNever()
		}
		w := c.word.Load()
		if w == fixedFrozen {
			runtime.Gosched() // a configuration is being published
			continue
		}
		// The rule of view, with the instant computed only when barriers
		// or a refusal need it.
		count, win := c.decode(w)
		k, before := c.grid.locate(now)
		behind := before || win > k // the caller arrives at the start of win
		if win < k {
			count, win = 0, k // the stored window is over
		}
		used := count
		if len(c.bars.list) > 0 {
			used = satAdd(count, c.bars.activeAt(c.instant(now, win, behind)))
		}
		if used > c.limit-n {
			return spi.RefuseUntil(c.retryAt(fixedView{win: win, count: count, at: c.instant(now, win, behind)}, n))
		}
		c.raiseHi(win)
		if c.word.CompareAndSwap(w, packFixed(count+n, win)) {
			return spi.Grant()
		}
	}
}

// Release is a no-op: taken quota stays taken.
func (*Fixed) Release(time.Time, int64) {}

// Cancel gives back n units granted at now (spi.Limiter.Cancel: now is the
// grant's instant, also when the Cancel comes late): if now lies in the
// current window, its count falls by n, never below 0. If the window has
// moved on since (or the grant was counted in a later window, its caller
// being behind it), or the limiter is sealed, Cancel does nothing: the
// units stay counted, which is only stricter; giving them back to a later
// window would lend it quota it never had. So does a Cancel of a grant
// made before a window-length change: its window may have ended before the
// change (and its units with it), or they may be in the barrier the change
// made, which this cannot tell. At the change's instant a Cancel applies:
// a grant made then by the predecessor is in a barrier that lasts at least
// as long as the new window, so taking the units from the new count
// instead frees nothing the grant's absence would not have. n < 0 panics.
func (f *Fixed) Cancel(now time.Time, n int64) {
	if n <= 0 {
		if n == 0 {
			return
		}
		panic(fmt.Sprintf("window: cancel of negative units %d", n))
	}
	for {
		c := f.cfg.Load()
		if c.sealed {
			return
		}
		w := c.word.Load()
		if w == fixedFrozen {
			runtime.Gosched()
			continue
		}
		count, win := c.decode(w)
		if k, before := c.grid.locate(now); before || win != k {
			return // counted in a window that has passed
		}
		next := max(count-n, 0)
		if next == count || c.word.CompareAndSwap(w, packFixed(next, win)) {
			return
		}
	}
}

// Reconfigure applies new parameters at now, carrying the state over:
//
//   - a permitLimit-only change keeps the current window and its count (a
//     limit change does not open a new window; a limit lowered below the
//     count admits nobody until the window ends);
//   - a window-length change starts new windows at now with a count of 0,
//     and the old window's count becomes a barrier until the later of the
//     old window's end and now + the new window.
//
// Barriers carry over until they expire; a window-length change also keeps
// each at least until the instant its units were deemed consumed plus the
// new window (for inherited usage, the Inherit call), so that two changes
// in a row never free what one change to the final parameters would keep.
// Invalid parameters return a
// *spi.ParamError and change nothing; so does a sealed limiter (ErrSealed).
func (f *Fixed) Reconfigure(now time.Time, p spi.Params) error {
	limit, window, err := fixedParams(p)
	if err != nil {
		return err
	}
	f.ctl.Lock()
	defer f.ctl.Unlock()
	old := f.cfg.Load()
	if old.sealed {
		return ErrSealed
	}
	v := old.freeze(now)
	bars := old.bars.pruned(v.at)
	if window == old.window {
		f.cfg.Store(old.successor(limit, bars, v))
		return nil
	}
	bars = remap(bars, v.at, window)
	if v.count > 0 {
		bars = append(bars, barrier{units: v.count, until: later(old.grid.at(v.win+1), now.Add(window)), since: now})
	}
	f.cfg.Store(newFixedConfig(limit, window, now, bars))
	return nil
}

// freeze stops the state word for good and returns the state at now.
// Control path only.
func (c *fixedConfig) freeze(now time.Time) fixedView {
	count, win := c.decode(c.word.Swap(fixedFrozen))
	return c.view(now, count, win)
}

// successor returns a configuration with the same windows as c that
// continues state v, with limit and bars.
func (c *fixedConfig) successor(limit int64, bars []barrier, v fixedView) *fixedConfig {
	next := newFixedConfig(limit, c.window, c.grid.origin, bars)
	next.hi.Store(max(c.hi.Load(), v.win))
	next.word.Store(packFixed(v.count, v.win))
	return next
}

// Seal freezes the limiter at now for good and returns the usage still
// counting: the current window's count until the window ends, and the
// active barriers, ordered by Until. Afterwards TryAcquire refuses with
// HintNever, Cancel does nothing and Snapshot keeps reporting the usage as
// it expires (with nothing available). A second Seal returns the usage
// still counting at its now.
func (f *Fixed) Seal(now time.Time) []spi.Usage {
	f.ctl.Lock()
	defer f.ctl.Unlock()
	old := f.cfg.Load()
	if !old.sealed {
		v := old.freeze(now)
		sealed := newFixedConfig(old.limit, old.window, old.grid.origin, old.bars.pruned(v.at))
		sealed.sealed, sealed.sealedCount, sealed.sealedWin = true, v.count, v.win
		sealed.word.Store(fixedFrozen)
		f.cfg.Store(sealed)
		old = sealed
	}
	v := old.sealedView(now)
	var u []spi.Usage
	if v.count > 0 {
		u = append(u, spi.Usage{Units: v.count, Until: old.grid.at(v.win + 1)})
	}
	return sortUsage(old.bars.appendUsage(u, v.at))
}

// Inherit adds a predecessor's usage (spi.Inheritor): each entry becomes a
// barrier until the later of its Until and the end of the window containing
// now, when units consumed now would stop counting here. A sealed limiter
// ignores it.
func (f *Fixed) Inherit(now time.Time, usage []spi.Usage) {
	f.ctl.Lock()
	defer f.ctl.Unlock()
	old := f.cfg.Load()
	if old.sealed {
		return
	}
	v := old.freeze(now)
	bars := inherited(old.bars.pruned(v.at), usage, now, old.grid.at(v.win+1))
	f.cfg.Store(old.successor(old.limit, bars, v))
}

// Snapshot reports the permit limit, the usage counting at now (the
// window's count and the active barriers) and what TryAcquire could grant
// now (nothing once sealed).
func (f *Fixed) Snapshot(now time.Time) spi.Snapshot {
	for {
		c := f.cfg.Load()
		var v fixedView
		if c.sealed {
			v = c.sealedView(now)
		} else {
			w := c.word.Load()
			if w == fixedFrozen {
				runtime.Gosched()
				continue
			}
			count, win := c.decode(w)
			v = c.view(now, count, win)
		}
		used := c.used(v)
		s := spi.Snapshot{Kind: FixedKindName, Limit: c.limit, InUse: used}
		if !c.sealed {
			s.Available = max(0, c.limit-used)
		}
		return s
	}
}
