package tokenbucket

import (
	"fmt"
	"time"

	"github.com/sluicerpc/sluice/spi"
)

// Seal freezes the bucket at now for good and returns the usage that still
// counts there, for a successor of another kind (spi.Handover):
//
//   - the bucket's own debt, tokenLimit less the whole tokens it holds, less
//     the units of the inherited barriers listed below (those are part of
//     the debt and are listed on their own, so nothing counts twice), as one
//     spi.Usage whose Until is the exact instant the bucket would be full
//     again if nothing more were taken (after its barriers expire), when
//     that debt is positive;
//   - every inherited barrier still active at now, with its own Units and
//     Until, in order of Until.
//
// The units add up to exactly tokenLimit less the whole tokens held.
// Afterwards TryAcquire refuses with spi.RefuseNever(), Cancel is ignored,
// Reconfigure and Update return ErrSealed, Inherit is ignored, and Snapshot
// keeps reporting the debt as it would be repaid, with Available 0. A second
// Seal returns nil.
func (l *Limiter) Seal(now time.Time) []spi.Usage {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cfg.Load().sealed {
		return nil
	}
	c, w := l.freeze()
	e := c.offset(now)
	x := c.project(w, e)

	var usage []spi.Usage
	debt := c.limit - floorDiv(x, c.scale)
	var barriers []spi.Usage
	for _, en := range c.entries {
		if en.off > e {
			debt -= en.units
			barriers = append(barriers, spi.Usage{Units: en.units, Until: en.until})
		}
	}
	if debt > 0 {
		usage = append(usage, spi.Usage{Units: debt, Until: c.at(c.earliest(e, x, c.limitS))})
	}
	usage = append(usage, barriers...)

	l.cfg.Store(c.successor(w, e, c.opts, nil, sealedConfig))
	return usage
}

// Inherit takes over a predecessor's usage at now (spi.Inheritor): each
// entry's Units are consumed at now (the bucket loses their sum and may go
// into debt beyond its capacity, repaid by refill), and each entry whose
// Until is after now is also a barrier: until then, refill cannot raise the
// bucket above tokenLimit less the units of the barriers still active.
// Entries with Until at or before now are consumed only. Barriers survive
// Reconfigure and are handed over again by Seal. An entry with negative
// Units panics. Inherit after Seal is ignored.
func (l *Limiter) Inherit(now time.Time, usage []spi.Usage) {
	var entries []entry
	for _, u := range usage {
		if u.Units < 0 {
			panic(fmt.Sprintf("tokenbucket: inherited usage with negative units %d (until %v)", u.Units, u.Until))
		}
		if u.Units > 0 {
			entries = append(entries, entry{units: u.Units, until: u.Until})
		}
	}
	if len(entries) == 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cfg.Load().sealed {
		return
	}
	c, w := l.freeze()
	l.cfg.Store(c.successor(w, c.offset(now), c.opts, entries, published))
}
