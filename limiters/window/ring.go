package window

import (
	"math"
	"math/bits"
	"sync/atomic"
	"time"
)

// The state of a sliding window is a ring of R = 2^m >= segments slots, one
// per segment: segment j's slot is j mod R. Each slot is one word, the low
// 32 bits of its segment number (the stamp), a sealed bit and a 31-bit
// count. A power-of-two ring keeps "j mod R" consistent with the 32-bit
// stamps across their wrap-around.
//
// The head word holds a phase and a 62-bit segment number, so it never
// wraps. Its phases cycle
//
//	open(s) -> sealing(s) -> opening(t) -> open(t)   (t > s)
//
// and end in retired(s) when a new configuration replaces the ring:
//
//   - open(s): segment s is open; grants and cancels change only its slot,
//     by compare-and-swap, and only while the slot is not sealed.
//   - sealing(s): a caller at a later segment is closing s: it sets s's
//     sealed bit (after which no compare-and-swap on the slot can succeed
//     any more) and then fixes the target t in the head.
//   - opening(t): the slots of segments skipped since s are stamped empty,
//     the sum of the closed segments of t's window is cached in prev, t's
//     slot is set to (t, 0, open), then the head becomes open(t).
//
// Every step writes a value that depends only on the head word, and a
// helper only writes after checking (once its reads are done) that the head
// still holds the word it is helping with, so helpers that arrive late
// change nothing. The invariant that follows: while the head is open(s),
// the slot of every segment j in (s-R, s] carries j's stamp and j's count,
// and the slots of s's closed segments do not change.
//
// open records the last segment that was open (raised before sealing it),
// from which opening(t) knows which segments were skipped.

// Head phases.
const (
	phaseOpen uint64 = iota
	phaseSealing
	phaseOpening
	phaseRetired
)

const phaseShift = 62

func packHead(phase uint64, seg int64) uint64 { return phase<<phaseShift | uint64(seg) }

func unpackHead(h uint64) (phase uint64, seg int64) { return h >> phaseShift, int64(h & maxIndex) }

// Slot layout.
const (
	slotSealed    = 1 << 31
	slotCountMask = 1<<31 - 1
)

func packSlot(seg int64, sealed bool, count int64) uint64 {
	v := uint64(uint32(seg))<<32 | uint64(count)
	if sealed {
		v |= slotSealed
	}
	return v
}

func slotStamp(v uint64) uint32 { return uint32(v >> 32) }
func slotCount(v uint64) int64  { return int64(v & slotCountMask) }

// packPrev caches sum as the closed-segments sum of segment seg.
func packPrev(seg, sum int64) uint64 {
	return uint64(uint32(seg))<<32 | uint64(min(sum, math.MaxUint32))
}

// slidingConfig is one immutable configuration and the ring that belongs to
// it.
type slidingConfig struct {
	limit    int64
	window   time.Duration
	segments int64
	grid     grid // step = window / segments
	bars     barriers
	mask     int64 // len(slots) - 1

	// sealed configurations refuse everything and have no ring; they
	// keep the state frozen at Seal for Snapshot.
	sealed     bool
	sealedSeg  int64
	sealedSegs []segCount

	head  atomic.Uint64
	open  atomic.Int64
	prev  atomic.Uint64 // stamp of the open segment << 32 | sum of its closed segments
	slots []atomic.Uint64
}

// segCount is one segment's count.
type segCount struct{ seg, count int64 }

// newSlidingConfig returns a configuration whose open segment is head, with
// the counts segs (segments in (head-segments, head], ascending).
func newSlidingConfig(limit int64, window time.Duration, segments int64, origin time.Time, bars []barrier, head int64, segs []segCount) *slidingConfig {
	ring := int64(1) << bits.Len64(uint64(segments-1))
	c := &slidingConfig{
		limit:    limit,
		window:   window,
		segments: segments,
		grid:     grid{origin: origin, step: int64(window) / segments},
		bars:     makeBarriers(bars),
		mask:     ring - 1,
		slots:    make([]atomic.Uint64, ring),
	}
	var closed int64
	for j := head - ring + 1; j <= head; j++ {
		var n int64
		for len(segs) > 0 && segs[0].seg < j {
			segs = segs[1:]
		}
		if len(segs) > 0 && segs[0].seg == j {
			n = segs[0].count
		}
		if j != head && j > head-segments {
			closed += n
		}
		c.slots[j&c.mask].Store(packSlot(j, j != head, n))
	}
	c.prev.Store(packPrev(head, closed))
	c.open.Store(head)
	c.head.Store(packHead(phaseOpen, head))
	return c
}

// closedSum returns the units of the closed segments of open segment seg's
// window.
func (c *slidingConfig) closedSum(seg int64) int64 {
	if a := c.prev.Load(); uint32(a>>32) == uint32(seg) {
		return int64(uint32(a))
	}
	return c.sumSlots(seg-c.segments+1, seg-1)
}

// sumSlots returns the counts of segments first..last.
func (c *slidingConfig) sumSlots(first, last int64) int64 {
	var sum int64
	for j := first; j <= last; j++ {
		if v := c.slots[j&c.mask].Load(); slotStamp(v) == uint32(j) {
			sum += slotCount(v)
		}
	}
	return sum
}

// advance takes the head from h one or more phases towards an open segment
// at or after target (at least the segment after the one h names). It
// returns when it is done or when another caller has moved the head.
func (c *slidingConfig) advance(h uint64, target int64) {
	phase, seg := unpackHead(h)
	switch phase {
	case phaseOpen:
		if target <= seg {
			return
		}
		raise(&c.open, seg)
		next := packHead(phaseSealing, seg)
		if !c.head.CompareAndSwap(h, next) {
			return
		}
		h = next
		fallthrough
	case phaseSealing:
		if !c.sealSlot(h, seg) {
			return
		}
		to := min(max(target, seg+1), maxIndex)
		next := packHead(phaseOpening, to)
		if !c.head.CompareAndSwap(h, next) {
			return
		}
		h, seg = next, to
		fallthrough
	case phaseOpening:
		c.openSegment(h, seg)
	}
}

// sealSlot sets the sealed bit of seg's slot, unless the head has left h.
func (c *slidingConfig) sealSlot(h uint64, seg int64) bool {
	slot := &c.slots[seg&c.mask]
	for {
		v := slot.Load()
		if c.head.Load() != h {
			return false
		}
		if v&slotSealed != 0 || slot.CompareAndSwap(v, v|slotSealed) {
			return true
		}
	}
}

// openSegment completes opening(seg) (the head word h).
func (c *slidingConfig) openSegment(h uint64, seg int64) {
	last := c.open.Load() // the segment open before seg
	for j := max(last+1, seg-c.mask); j < seg; j++ {
		if !c.store(&c.slots[j&c.mask], h, packSlot(j, true, 0)) {
			return
		}
	}
	sum := c.sumSlots(seg-c.segments+1, min(last, seg-1))
	if !c.store(&c.prev, h, packPrev(seg, sum)) {
		return
	}
	if !c.store(&c.slots[seg&c.mask], h, packSlot(seg, false, 0)) {
		return
	}
	c.head.CompareAndSwap(h, packHead(phaseOpen, seg))
}

// store sets *w to want, unless the head has left h.
func (c *slidingConfig) store(w *atomic.Uint64, h, want uint64) bool {
	for {
		v := w.Load()
		if c.head.Load() != h {
			return false
		}
		if v == want || w.CompareAndSwap(v, want) {
			return true
		}
	}
}

// raise makes *a at least v.
func raise(a *atomic.Int64, v int64) {
	for {
		cur := a.Load()
		if cur >= v || a.CompareAndSwap(cur, v) {
			return
		}
	}
}

// slidingState is the frozen state of a ring at one instant.
type slidingState struct {
	seg  int64      // the current segment
	at   time.Time  // the instant: now, or the start of the open segment for a caller behind it
	segs []segCount // the segments still counting with units, ascending
}

// retire freezes the ring for good (control path) and returns its state at
// now: it completes any move in progress, swaps the sentinel retired(s) into
// the head and seals the open segment's slot, so that no grant or cancel
// can change the ring afterwards.
func (c *slidingConfig) retire(now time.Time) slidingState {
	k, before := c.grid.locate(now)
	for {
		h := c.head.Load()
		phase, seg := unpackHead(h)
		switch phase {
		case phaseRetired:
			panic("window: internal error: retiring a retired ring")
		case phaseOpen:
			if !c.head.CompareAndSwap(h, packHead(phaseRetired, seg)) {
				continue
			}
			slot := &c.slots[seg&c.mask]
			for {
				v := slot.Load()
				if v&slotSealed != 0 || slot.CompareAndSwap(v, v|slotSealed) {
					break
				}
			}
			st := slidingState{seg: max(k, seg), at: now}
			if k < seg || before {
				st.at = c.grid.at(seg)
			}
			for j := st.seg - c.segments + 1; j <= seg; j++ {
				if v := c.slots[j&c.mask].Load(); slotStamp(v) == uint32(j) && slotCount(v) > 0 {
					st.segs = append(st.segs, segCount{seg: j, count: slotCount(v)})
				}
			}
			return st
		default:
			c.advance(h, k)
		}
	}
}

// sealedState returns the frozen state of a sealed configuration as it
// counts at now.
func (c *slidingConfig) sealedState(now time.Time) slidingState {
	k, before := c.grid.locate(now)
	st := slidingState{seg: max(k, c.sealedSeg), at: now}
	if k < c.sealedSeg || before {
		st.at = c.grid.at(c.sealedSeg)
	}
	first := st.seg - c.segments + 1
	for i, sc := range c.sealedSegs {
		if sc.seg >= first {
			st.segs = c.sealedSegs[i:]
			break
		}
	}
	return st
}
