package window_test

import (
	"fmt"
	"sort"
)

// The no-free-burst checkers work from a log of grants and publications
// only, independently of how a limiter carries state. They state the bound
// of DESIGN.md section 2 (what is admitted is never more than the old
// configuration allowed up to the publication instant plus what the new one
// allows after it, starting from the carried usage) in two forms.

// epochRec is a configuration in force from its publication instant start
// (the limiter's creation for the first) until the next epoch's start. Its
// cfg.origin is where its windows are aligned: the publication for a
// window change or a new limiter, the previous origin for a limit change.
type epochRec struct {
	cfg   refConfig
	start int64
}

// grantRec is a grant (cancelled ones are removed from the log) of n units
// at t, made under an epoch in [eMin, eMax]: a grant racing a publication
// may belong to either side of it.
type grantRec struct {
	t, n       int64
	eMin, eMax int
}

// checkInstant checks the grant g of a definite epoch e = g.eMin right after
// it was made, against every earlier grant of the log: at g's instant, the
// units of epoch e that still count under e's configuration, plus the units
// of earlier epochs that still count under their own configuration (their
// natural expiry: a carried unit counts at least that long, whatever the
// algorithm or configuration that carries it), must fit e's limit. A
// limiter that reset a window, dropped a segment, opened a new window on a
// limit change or forgot inherited usage would fail it.
func checkInstant(epochs []epochRec, log []grantRec, g grantRec) error {
	e := g.eMin
	cfg := epochs[e].cfg
	var own, carried int64
	for _, h := range log {
		switch {
		case h.t > g.t:
		case h.eMin == e && h.eMax == e:
			if cfg.expiry(h.t) > g.t {
				own += h.n
			}
		case h.eMax < e:
			if epochs[h.eMax].cfg.expiry(h.t) > g.t {
				carried += h.n
			}
		}
	}
	if own+carried > cfg.limit {
		return fmt.Errorf("free burst at t0+%dns under epoch %d %v (from t0+%dns): %d units of its own and %d carried still count, limit %d",
			g.t, e, cfg, epochs[e].start, own, carried, cfg.limit)
	}
	return nil
}

// checkBlocks checks, for every epoch e and every block of e's
// configuration that overlaps e's lifetime (a fixed window; for a sliding
// window, any run of `segments` consecutive segments, which every instant
// of its last segment sees whole), that the units granted inside the block
// under epochs up to e are at most the largest limit in force during the
// block. Units of earlier epochs inside a block are exactly those carried
// into e (the same window or segments after a limit change; the usage at
// the publication instant after a window change or a replacement, which a
// barrier keeps for at least the first block), so a block can only hold
// more than every limit if some capacity was handed out twice. log must be
// sorted by t; end is the last instant observed.
func checkBlocks(epochs []epochRec, log []grantRec, end int64) error {
	for e, ep := range epochs {
		cfg := ep.cfg
		d, s := cfg.seg(), cfg.segments
		from, to := ep.start, end
		if e+1 < len(epochs) {
			to = epochs[e+1].start
		}
		jLast := (to - cfg.origin) / d // blocks starting after the epoch are the next epoch's
		next := int64(0)               // first block not yet checked
		first := sort.Search(len(log), func(i int) bool { return log[i].t >= max(from-cfg.window, cfg.origin) })
		for _, g := range log[first:] {
			if g.t >= to+cfg.window {
				break
			}
			if g.eMax > e {
				continue
			}
			sj := (g.t - cfg.origin) / d
			for j := max(next, sj-s+1); j <= min(sj, jLast); j++ {
				bs, be := cfg.origin+j*d, cfg.origin+(j+s)*d
				next = j + 1
				if be <= from {
					continue // the block ended before the epoch began
				}
				sum := blockSum(log, bs, be, e)
				if bound := blockBound(epochs, e, bs, be); sum > bound {
					return fmt.Errorf("block [t0+%dns, t0+%dns) of epoch %d %v holds %d units, more than any limit in force during it (%d)",
						bs, be, e, cfg, sum, bound)
				}
			}
		}
	}
	return nil
}

// blockSum returns the units granted in [bs, be) under epochs up to e.
func blockSum(log []grantRec, bs, be int64, e int) int64 {
	i := sort.Search(len(log), func(i int) bool { return log[i].t >= bs })
	var sum int64
	for ; i < len(log) && log[i].t < be; i++ {
		if log[i].eMax <= e {
			sum += log[i].n
		}
	}
	return sum
}

// blockBound returns the largest limit of the epochs up to e in force during
// [bs, be).
func blockBound(epochs []epochRec, e int, bs, be int64) int64 {
	var bound int64
	for f := e; f >= 0; f-- {
		if epochs[f].start >= be {
			continue
		}
		bound = max(bound, epochs[f].cfg.limit)
		if epochs[f].start < bs {
			break // (an epoch that starts at bs shares bs with the one before)
		}
	}
	return bound
}
