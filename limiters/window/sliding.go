package window

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicerpc/sluice/spi"
)

// Sliding is a sliding-window rate limiter with the semantics of .NET's
// SlidingWindowRateLimiter: the window W is divided into S segments of
// length d = W/S aligned to the limiter's origin (its creation time, or the
// publication of a window or segments change), and at any instant the window
// covers the current segment and the S-1 before it. A unit taken in segment
// [s, s+d) therefore counts until s+W. Usage it cannot map onto its segments
// (inherited from another algorithm, or left by a window or segments change)
// counts as barriers until explicit instants. The zero value is not usable;
// use NewSliding or SlidingKind.New.
//
// The immediate path takes no lock and allocates nothing. The parameters,
// origin and barriers live in an immutable configuration reached through one
// atomic pointer, which also holds the state words (a ring, see ring.go):
// one counter per segment stamped with its segment number, a head word
// naming the open segment, and a cache of the sum of the closed segments of
// its window. Only the open segment's counter changes while its segment is
// open, and a closed segment's counter never changes again, so a grant that
// reads the cached sum and the barriers and then increments the open
// counter by compare-and-swap is checked against exactly the state it
// extends. Moving to a later segment first seals the open counter (every
// grant racing with it then fails its compare-and-swap and retries in the
// next segment), then fixes the target segment in the head word, then
// prepares its counter and sum; every caller that meets a half-done move
// completes it, so no caller ever waits for another (lock-free).
//
// Reconfigure, Seal and Inherit are the control path: the kernel serializes
// them (Sliding also does, with a mutex the immediate path never touches).
// They retire the head word with a sentinel and seal the open counter, which
// freezes the whole ring for good, compute the new state from the frozen
// one, and publish a new configuration. A TryAcquire or Cancel that meets
// the sentinel reloads the configuration and retries.
type Sliding struct {
	cfg atomic.Pointer[slidingConfig]
	ctl sync.Mutex // serializes the control path
}

var (
	_ spi.Limiter   = (*Sliding)(nil)
	_ spi.Handover  = (*Sliding)(nil)
	_ spi.Inheritor = (*Sliding)(nil)
)

// NewSliding returns an empty sliding window admitting limit units per
// window, divided into segments, aligned to now. It panics if a parameter is
// out of range (see SlidingKind.Validate); SlidingKind.New returns the error
// instead.
func NewSliding(limit int64, window time.Duration, segments int64, now time.Time) *Sliding {
	if _, _, _, err := slidingParams(SlidingSpec(limit, window, segments).Params); err != nil {
		panic("window: " + err.Error())
	}
	return newSliding(limit, window, segments, now)
}

func newSliding(limit int64, window time.Duration, segments int64, now time.Time) *Sliding {
	s := &Sliding{}
	s.cfg.Store(newSlidingConfig(limit, window, segments, now, nil, 0, nil))
	return s
}

// TryAcquire takes n units if the usage of the window (the current segment
// and the segments-1 before it), the active barriers and n fit the permit
// limit. A refusal says when n units will fit if nothing else happens (the
// exact instant), or HintNever if n exceeds the limit or the limiter is
// sealed. n == 0 is always granted; n < 0 panics.
//
// A refusal is decided from several words; it is returned only if the head
// and the open segment's slot are unchanged after its retry instant was
// computed (the closed segments cannot change while they are), so the hint
// is exact for one consistent state.
func (s *Sliding) TryAcquire(now time.Time, n int64) spi.Decision {
	if n <= 0 {
		if n == 0 {
			return spi.Grant()
		}
		panic(fmt.Sprintf("window: acquire of negative units %d", n))
	}
	for {
		c := s.cfg.Load()
		if c.sealed || n > c.limit {
			return spi.RefuseNever()
		}
		h := c.head.Load()
		phase, seg := unpackHead(h)
		k, before := c.grid.locate(now)
		if phase != phaseOpen || k > seg {
			if phase == phaseRetired {
				runtime.Gosched() // a configuration is being published
			} else {
				c.advance(h, k)
			}
			continue
		}
		slot := &c.slots[seg&c.mask]
		v := slot.Load()
		if v&slotSealed != 0 || slotStamp(v) != uint32(seg) {
			continue // the segment is being closed
		}
		behind := k < seg || before // the caller arrives at the start of seg
		cur := slotCount(v)
		used := c.closedSum(seg) + cur
		if len(c.bars.list) > 0 {
			used = satAdd(used, c.bars.activeAt(c.instant(now, seg, behind)))
		}
		if used > c.limit-n {
			retry := c.retryAt(seg, cur, c.instant(now, seg, behind), n)
			if c.head.Load() != h || slot.Load() != v {
				continue // the state moved while it was read: decide again
			}
			return spi.RefuseUntil(retry)
		}
		if slot.CompareAndSwap(v, v+uint64(n)) {
			return spi.Grant()
		}
	}
}

// instant returns the instant a caller at now is treated as arriving at in
// open segment seg: now, or the start of seg for a caller behind it.
func (c *slidingConfig) instant(now time.Time, seg int64, behind bool) time.Time {
	if behind {
		return c.grid.at(seg)
	}
	return now
}

// retryAt returns the earliest instant at which n units fit if nothing else
// happens, seg being the open segment (with cur units) at at: usage only
// falls when a segment leaves the window or a barrier expires, so it is one
// of those instants.
func (c *slidingConfig) retryAt(seg, cur int64, at time.Time, n int64) time.Time {
	need := c.limit - n // usage must fall to need
	first := seg - c.segments + 1
	var total int64
	for j := first; j <= seg; j++ {
		total += c.countOf(j, seg, cur)
	}
	b := &c.bars
	i := b.firstActive(at)
	j := first
	for {
		for j <= seg && c.countOf(j, seg, cur) == 0 {
			j++
		}
		var t time.Time
		switch {
		case j <= seg && (i == len(b.list) || !b.list[i].until.Before(c.grid.at(j+c.segments))):
			t = c.grid.at(j + c.segments)
		case i < len(b.list):
			t = b.list[i].until
		default:
			return at // nothing counts any more; unreachable for a refusal
		}
		for j <= seg && !c.grid.at(j+c.segments).After(t) {
			total -= c.countOf(j, seg, cur)
			j++
		}
		for i < len(b.list) && !b.list[i].until.After(t) {
			i++
		}
		if satAdd(total, b.from(i)) <= need {
			return t
		}
	}
}

// countOf returns segment j's count, cur for the open segment seg.
func (c *slidingConfig) countOf(j, seg, cur int64) int64 {
	if j == seg {
		return cur
	}
	v := c.slots[j&c.mask].Load()
	if slotStamp(v) != uint32(j) {
		return 0
	}
	return slotCount(v)
}

// Release is a no-op: taken quota stays taken.
func (*Sliding) Release(time.Time, int64) {}

// Cancel gives back n units granted at now (spi.Limiter.Cancel: now is the
// grant's instant, also when the Cancel comes late): if now lies in the
// open segment, its count falls by n, never below 0. If the segment has
// closed since (or the grant was counted in a later segment, its caller
// being behind it), the grant came before a window or segments change
// (see Fixed.Cancel), or the limiter is sealed, Cancel does nothing: the
// units stay counted, which is only stricter. n < 0 panics.
func (s *Sliding) Cancel(now time.Time, n int64) {
	if n <= 0 {
		if n == 0 {
			return
		}
		panic(fmt.Sprintf("window: cancel of negative units %d", n))
	}
	for {
		c := s.cfg.Load()
		if c.sealed {
			return
		}
		h := c.head.Load()
		phase, seg := unpackHead(h)
		if phase == phaseRetired {
			runtime.Gosched()
			continue
		}
		if k, before := c.grid.locate(now); before || phase != phaseOpen || k != seg {
			return // counted in a segment that closed
		}
		slot := &c.slots[seg&c.mask]
		v := slot.Load()
		if slotStamp(v) != uint32(seg) {
			return
		}
		if v&slotSealed != 0 {
			if c.head.Load() == packHead(phaseRetired, seg) {
				continue // a Reconfigure is carrying the segment over: cancel there
			}
			return
		}
		d := min(n, slotCount(v))
		if d == 0 || slot.CompareAndSwap(v, v-uint64(d)) {
			return
		}
	}
}

// Reconfigure applies new parameters at now, carrying the state over:
//
//   - a permitLimit-only change keeps every segment;
//   - a window or segments change starts new segments at now, empty, and
//     each old segment whose units still count becomes a barrier until the
//     later of when they would have left the old window (segment start +
//     old window) and when units taken at the end of that segment would
//     leave the new one (segment end + new window).
//
// Barriers carry over until they expire; a window or segments change also
// keeps each at least until the instant its units were deemed consumed plus
// the new window (for inherited usage, the Inherit call), so that two
// changes in a row never free what one change to the final parameters would
// keep. Invalid parameters return a
// *spi.ParamError and change nothing; so does a sealed limiter (ErrSealed).
func (s *Sliding) Reconfigure(now time.Time, p spi.Params) error {
	limit, window, segments, err := slidingParams(p)
	if err != nil {
		return err
	}
	s.ctl.Lock()
	defer s.ctl.Unlock()
	old := s.cfg.Load()
	if old.sealed {
		return ErrSealed
	}
	st := old.retire(now)
	bars := old.bars.pruned(st.at)
	if window == old.window && segments == old.segments {
		s.cfg.Store(newSlidingConfig(limit, window, segments, old.grid.origin, bars, st.seg, st.segs))
		return nil
	}
	bars = remap(bars, st.at, window)
	for _, sc := range st.segs {
		end := old.grid.at(sc.seg + 1)
		bars = append(bars, barrier{
			units: sc.count,
			until: later(old.grid.at(sc.seg+old.segments), end.Add(window)),
			since: end,
		})
	}
	s.cfg.Store(newSlidingConfig(limit, window, segments, now, bars, 0, nil))
	return nil
}

// Seal freezes the limiter at now for good and returns the usage still
// counting: one entry per segment with units, until the segment leaves the
// window (segment start + window), and the active barriers, ordered by
// Until. Afterwards TryAcquire refuses with HintNever, Cancel does nothing
// and Snapshot keeps reporting the usage as it expires (with nothing
// available). A second Seal returns the usage still counting at its now.
func (s *Sliding) Seal(now time.Time) []spi.Usage {
	s.ctl.Lock()
	defer s.ctl.Unlock()
	c := s.cfg.Load()
	if !c.sealed {
		st := c.retire(now)
		sealed := &slidingConfig{
			limit:      c.limit,
			window:     c.window,
			segments:   c.segments,
			grid:       c.grid,
			bars:       makeBarriers(c.bars.pruned(st.at)),
			sealed:     true,
			sealedSeg:  st.seg,
			sealedSegs: st.segs,
		}
		sealed.head.Store(packHead(phaseRetired, st.seg))
		s.cfg.Store(sealed)
		c = sealed
	}
	st := c.sealedState(now)
	u := make([]spi.Usage, 0, len(st.segs)+len(c.bars.list))
	for _, sc := range st.segs {
		u = append(u, spi.Usage{Units: sc.count, Until: c.grid.at(sc.seg + c.segments)})
	}
	return sortUsage(c.bars.appendUsage(u, st.at))
}

// Inherit adds a predecessor's usage (spi.Inheritor): each entry becomes a
// barrier until the later of its Until and the instant a unit taken now
// would leave the window (the start of now's segment + window). A sealed
// limiter ignores it.
func (s *Sliding) Inherit(now time.Time, usage []spi.Usage) {
	s.ctl.Lock()
	defer s.ctl.Unlock()
	c := s.cfg.Load()
	if c.sealed {
		return
	}
	st := c.retire(now)
	bars := inherited(c.bars.pruned(st.at), usage, now, c.grid.at(st.seg+c.segments))
	s.cfg.Store(newSlidingConfig(c.limit, c.window, c.segments, c.grid.origin, bars, st.seg, st.segs))
}

// Snapshot reports the permit limit, the usage counting at now (the
// segments of the window and the active barriers) and what TryAcquire could
// grant now (nothing once sealed). The slots are read while the head word
// stays the same, so the closed segments are those of one state and the
// open one is read once.
func (s *Sliding) Snapshot(now time.Time) spi.Snapshot {
	for {
		c := s.cfg.Load()
		if c.sealed {
			st := c.sealedState(now)
			var used int64
			for _, sc := range st.segs {
				used += sc.count
			}
			return spi.Snapshot{Kind: SlidingKindName, Limit: c.limit, InUse: satAdd(used, c.bars.activeAt(st.at))}
		}
		h := c.head.Load()
		phase, seg := unpackHead(h)
		if phase == phaseRetired {
			runtime.Gosched()
			continue
		}
		k, before := c.grid.locate(now)
		at := now
		if k < seg || before {
			at = c.grid.at(seg)
		}
		var used int64
		for j := max(k, seg) - c.segments + 1; j <= seg; j++ {
			v := c.slots[j&c.mask].Load()
			if slotStamp(v) == uint32(j) {
				used += slotCount(v)
			}
		}
		if c.head.Load() != h {
			continue // a segment moved while the slots were read
		}
		used = satAdd(used, c.bars.activeAt(at))
		return spi.Snapshot{Kind: SlidingKindName, Limit: c.limit, InUse: used, Available: max(0, c.limit-used)}
	}
}
