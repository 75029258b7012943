package window

import (
	"slices"
	"time"

	"github.com/sluicerpc/sluice/spi"
)

// barrier is usage that counts against the limit, whatever the window
// does, until an explicit instant: it is how a window carries what it cannot
// map exactly onto its current windows or segments (a window-length change,
// usage inherited from another algorithm).
type barrier struct {
	units int64
	until time.Time // the units count while now < until
	// since is the latest instant at which the units may have been
	// consumed, as far as this limiter knows: the publication of a fixed
	// window's length change, the end of a sliding window's segment, the
	// Inherit call. A later window change keeps the units at least until
	// since + the new window (see remap).
	since time.Time
}

// barriers is an immutable list of barriers sorted by until, with suffix
// sums so that the units active at an instant cost one short scan.
type barriers struct {
	list   []barrier
	suffix []int64 // suffix[i] is the (saturated) sum of list[i:].units
}

// makeBarriers sorts list by until (stably, so ties keep their order) and
// drops empty entries. It takes ownership of list.
func makeBarriers(list []barrier) barriers {
	list = slices.DeleteFunc(list, func(b barrier) bool { return b.units <= 0 })
	if len(list) == 0 {
		return barriers{}
	}
	slices.SortStableFunc(list, func(a, b barrier) int { return a.until.Compare(b.until) })
	suffix := make([]int64, len(list))
	var sum int64
	for i := len(list) - 1; i >= 0; i-- {
		sum = satAdd(sum, list[i].units)
		suffix[i] = sum
	}
	return barriers{list: list, suffix: suffix}
}

// firstActive returns the index of the first barrier still counting at at.
func (b *barriers) firstActive(at time.Time) int {
	i := 0
	for i < len(b.list) && !b.list[i].until.After(at) {
		i++
	}
	return i
}

// from returns the units of list[i:].
func (b *barriers) from(i int) int64 {
	if i >= len(b.suffix) {
		return 0
	}
	return b.suffix[i]
}

// activeAt returns the units of the barriers still counting at at.
func (b *barriers) activeAt(at time.Time) int64 {
	if len(b.list) == 0 {
		return 0
	}
	return b.from(b.firstActive(at))
}

// pruned returns a fresh copy of the barriers still counting at at, for a
// new configuration to extend.
func (b *barriers) pruned(at time.Time) []barrier {
	return slices.Clone(b.list[b.firstActive(at):])
}

// appendUsage appends the barriers still counting at at to u, as spi.Usage.
func (b *barriers) appendUsage(u []spi.Usage, at time.Time) []spi.Usage {
	for _, e := range b.list[b.firstActive(at):] {
		u = append(u, spi.Usage{Units: e.units, Until: e.until})
	}
	return u
}

// inherited turns a predecessor's usage into barriers that last until the
// later of each entry's own expiry and horizon, the instant at which units
// consumed now would stop counting here (spi.Inheritor).
func inherited(list []barrier, usage []spi.Usage, now, horizon time.Time) []barrier {
	for _, u := range usage {
		if u.Units > 0 {
			list = append(list, barrier{units: u.Units, until: later(u.Until, horizon), since: now})
		}
	}
	return list
}

// remap carries barriers over a window change published at at: the
// barriers are part of the state the new configuration starts from, as if
// their units had been consumed at at under the new window w, so each lasts
// at least until at + w (the new horizon), and never less than before.
// (Keeping a barrier only until since + w let a fixed window admit a unit
// inside the first new window that already carried one: a free burst the
// conformance suite's NoFreeBurst property found.)
func remap(list []barrier, at time.Time, w time.Duration) []barrier {
	for i := range list {
		list[i].until = later(list[i].until, at.Add(w))
		list[i].since = at
	}
	return list
}

// sortUsage orders usage by Until; ties keep their order.
func sortUsage(u []spi.Usage) []spi.Usage {
	slices.SortStableFunc(u, func(a, b spi.Usage) int { return a.Until.Compare(b.Until) })
	return u
}
