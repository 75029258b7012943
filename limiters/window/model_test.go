package window_test

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/sluicerpc/sluice/limiters/window"
	"github.com/sluicerpc/sluice/spi"
)

// refConfig is a configuration in the reference model's terms: times are
// nanoseconds after t0. A fixed window is a sliding window of one segment:
// in both, a unit taken at t counts until the start of t's segment plus the
// window.
type refConfig struct {
	fixed    bool
	limit    int64
	window   int64 // ns
	segments int64 // 1 for a fixed window
	origin   int64 // ns after t0
}

func (c refConfig) seg() int64 { return c.window / c.segments }

func (c refConfig) segStart(t int64) int64 {
	if t < c.origin {
		return c.origin
	}
	return c.origin + (t-c.origin)/c.seg()*c.seg()
}

// expiry is when a unit taken at t stops counting.
func (c refConfig) expiry(t int64) int64 { return c.segStart(t) + c.window }

func (c refConfig) kind() string {
	if c.fixed {
		return window.FixedKindName
	}
	return window.SlidingKindName
}

func (c refConfig) params() spi.Params {
	if c.fixed {
		return window.FixedSpec(c.limit, time.Duration(c.window)).Params
	}
	return window.SlidingSpec(c.limit, time.Duration(c.window), c.segments).Params
}

// newLimiter builds the limiter c describes, at its origin.
func (c refConfig) newLimiter() spi.Limiter {
	if c.fixed {
		return window.NewFixed(c.limit, time.Duration(c.window), at(time.Duration(c.origin)))
	}
	return window.NewSliding(c.limit, time.Duration(c.window), c.segments, at(time.Duration(c.origin)))
}

func (c refConfig) String() string {
	if c.fixed {
		return fmt.Sprintf("fixed{limit=%d window=%d origin=%d}", c.limit, c.window, c.origin)
	}
	return fmt.Sprintf("sliding{limit=%d window=%d segments=%d origin=%d}", c.limit, c.window, c.segments, c.origin)
}

type refGrant struct{ t, n int64 }

// refBarrier is carried usage: units counting until until, deemed consumed
// at since (a window change keeps them at least until since + the new
// window).
type refBarrier struct{ units, until, since int64 }

// refModel is the reference model: a sequential, brute-force statement of
// the rules. It keeps every grant of the current configuration and computes
// usage by summing the grants and barriers that still count; it finds
// retry instants by trying every instant at which usage can fall.
type refModel struct {
	cfg      refConfig
	grants   []refGrant // since cfg.origin; cancels reduce n
	barriers []refBarrier
	sealed   bool
}

func newRef(cfg refConfig) *refModel { return &refModel{cfg: cfg} }

func (m *refModel) clone() *refModel {
	c := *m
	c.grants = slices.Clone(m.grants)
	c.barriers = slices.Clone(m.barriers)
	return &c
}

func (m *refModel) usage(t int64) int64 {
	var u int64
	for _, g := range m.grants {
		if m.cfg.expiry(g.t) > t {
			u += g.n
		}
	}
	for _, b := range m.barriers {
		if b.until > t {
			u += b.units
		}
	}
	return u
}

func (m *refModel) acquire(now, n int64) spi.Decision {
	if n == 0 {
		return spi.Grant()
	}
	if m.sealed || n > m.cfg.limit {
		return spi.RefuseNever()
	}
	if m.usage(now)+n <= m.cfg.limit {
		m.grants = append(m.grants, refGrant{now, n})
		return spi.Grant()
	}
	var cands []int64
	for _, g := range m.grants {
		if e := m.cfg.expiry(g.t); e > now {
			cands = append(cands, e)
		}
	}
	for _, b := range m.barriers {
		if b.until > now {
			cands = append(cands, b.until)
		}
	}
	slices.Sort(cands)
	for _, c := range cands {
		if m.usage(c)+n <= m.cfg.limit {
			return spi.RefuseUntil(at(time.Duration(c)))
		}
	}
	panic("model: no retry instant")
}

// cancel takes n units back from the grants of now's segment.
func (m *refModel) cancel(now, n int64) {
	if m.sealed {
		return
	}
	cur := m.cfg.segStart(now)
	for i := len(m.grants) - 1; i >= 0 && n > 0; i-- {
		if g := &m.grants[i]; m.cfg.segStart(g.t) == cur {
			d := min(n, g.n)
			g.n -= d
			n -= d
		}
	}
}

// liveSegments returns the counts of the segments still counting at now.
func (m *refModel) liveSegments(now int64) (starts, counts []int64) {
	for _, g := range m.grants {
		if g.n == 0 || m.cfg.expiry(g.t) <= now {
			continue
		}
		s := m.cfg.segStart(g.t)
		if i := slices.Index(starts, s); i >= 0 {
			counts[i] += g.n
		} else {
			starts, counts = append(starts, s), append(counts, g.n)
		}
	}
	return starts, counts
}

func (m *refModel) prune(now int64) {
	m.barriers = slices.DeleteFunc(m.barriers, func(b refBarrier) bool { return b.until <= now })
}

// reconfigure applies next (same kind; its origin is ignored).
func (m *refModel) reconfigure(now int64, next refConfig) error {
	if m.sealed {
		return window.ErrSealed
	}
	m.prune(now)
	if next.window == m.cfg.window && next.segments == m.cfg.segments {
		m.cfg.limit = next.limit
		return nil
	}
	for i := range m.barriers {
		// Carried barriers start the new configuration as if consumed
		// now: they last at least until now + the new window.
		m.barriers[i].until = max(m.barriers[i].until, now+next.window)
		m.barriers[i].since = now
	}
	starts, counts := m.liveSegments(now)
	for i, s := range starts {
		since := s + m.cfg.seg() // the end of the segment
		if m.cfg.fixed {
			since = now
		}
		m.barriers = append(m.barriers, refBarrier{counts[i], max(s+m.cfg.window, since+next.window), since})
	}
	next.origin = now
	m.cfg, m.grants = next, nil
	return nil
}

func (m *refModel) seal(now int64) []spi.Usage {
	m.sealed = true
	starts, counts := m.liveSegments(now)
	var u []spi.Usage
	for i, s := range starts {
		u = append(u, spi.Usage{Units: counts[i], Until: at(time.Duration(s + m.cfg.window))})
	}
	for _, b := range m.barriers {
		if b.until > now {
			u = append(u, spi.Usage{Units: b.units, Until: at(time.Duration(b.until))})
		}
	}
	return canonicalUsage(u)
}

func (m *refModel) inherit(now int64, u []spi.Usage) {
	if m.sealed {
		return
	}
	horizon := m.cfg.expiry(now)
	for _, e := range u {
		if e.Units > 0 {
			m.barriers = append(m.barriers, refBarrier{e.Units, max(int64(e.Until.Sub(t0)), horizon), now})
		}
	}
}

func (m *refModel) snapshot(now int64) spi.Snapshot {
	used := m.usage(now)
	s := spi.Snapshot{Kind: m.cfg.kind(), Limit: m.cfg.limit, InUse: used}
	if !m.sealed {
		s.Available = max(0, m.cfg.limit-used)
	}
	return s
}

// canonicalUsage orders usage by Until, then Units, for comparison: the
// order of entries with the same Until is not part of the contract.
func canonicalUsage(u []spi.Usage) []spi.Usage {
	u = slices.Clone(u)
	slices.SortFunc(u, func(a, b spi.Usage) int {
		return cmp.Or(a.Until.Compare(b.Until), cmp.Compare(a.Units, b.Units))
	})
	return u
}
