package tokenbucket

import (
	"math"
	"math/big"
	"slices"
	"sync/atomic"
	"time"
)

// A config is one immutable publication of a token bucket: parameters,
// origin and barriers, plus the one mutable word of bucket state. The hot
// path changes only the word, by compare-and-swap; every other change
// (Reconfigure, Seal, Inherit, the expiry of a barrier, and a rebase of the
// origin once its credit clock grows large) freezes the word for good and
// publishes a successor config built from the frozen value.
//
// # Arithmetic
//
// Tokens are counted in scaled units: whole tokens in discrete mode (scale
// 1); 1/P token in continuous mode, where tokensPerPeriod/period = Q/P in
// lowest terms, so that refill is exactly Q units per nanosecond. Both modes
// are the same formula with a different period: refill in (a, b] (offsets
// from the origin in ns) is (b/period - a/period) × rate, with period the
// refill period and rate = tokensPerPeriod in discrete mode, and period = 1
// ns and rate = Q in continuous mode.
//
// The credit clock C(e) = refill(0, e) counts the units added since the
// origin. The word holds W such that, at every offset e of the first
// segment (before the first barrier expires), the bucket holds
//
//	tokens(e) = min(cap, C(e) - W)
//
// (the GCRA form: -W is the bucket's content at the origin, less every unit
// granted since, plus every unit cancelled). A grant of n units at e stores
// C(e) - tokens(e) + n; refill needs no write at all.
type config struct {
	word atomic.Int64 // W, or frozen
	// full is the latest offset (from origin; negative before it) at
	// which the word was rewritten, or the bucket projected, within
	// margin of the cap (see nearCap), or noFull. A grant made before
	// it is not given back by a late Cancel (see Limiter.Cancel). It is
	// raised before the word is rewritten, and a Cancel reads it after
	// the word, so a Cancel that sees a rewrite sees its note.
	full atomic.Int64
	// maxN is the most units one TryAcquire has asked for (up to the
	// limit, in either mode), raised before its rewrite: a rewrite that
	// comes after a grant of n units reads maxN >= n.
	maxN atomic.Int64

	opts      Options
	origin    time.Time
	unlimited bool
	sealed    bool

	scale  int64 // scaled units per token
	rate   int64 // scaled units added per period
	period int64 // ns; 1 in continuous mode
	limit  int64 // tokenLimit
	limitS int64 // limit × scale
	capS   int64 // the cap of the first segment (limitS without barriers)

	// eLimit is the largest offset the hot path serves from this config:
	// before the first barrier expires and while C(e) <= creditLimit.
	// Beyond it the config is rebuilt.
	eLimit int64

	// segs are the barrier segments in time order: segment i holds the
	// offsets [segs[i-1].end, segs[i].end), during which the bucket cannot
	// hold more than segs[i].capS. After the last segment the cap is
	// limitS.
	segs []segment
	// entries are the inherited barriers still active at the origin,
	// sorted by expiry, as Seal hands them over.
	entries []entry

	// A config published by Reconfigure, Update or Inherit carried pubS
	// scaled tokens at offset pubE (-1 otherwise). At that instant a
	// Cancel cannot raise the bucket above them: the units it gives back
	// may have been granted by the predecessor, which counted them (or,
	// unlimited, may not have taken them), and the carried state already
	// reflects that.
	pubE, pubS int64
}

type segment struct {
	end  int64 // offset of the first instant after the segment
	capS int64
}

type entry struct {
	units int64
	until time.Time
	off   int64 // until - origin, in ns; the barrier holds while e < off
}

const (
	// frozen marks a config whose word was taken over by a successor. W
	// never reaches it.
	frozen = math.MinInt64
	// creditLimit bounds the credit clock inside one config.
	creditLimit = 1 << 60
	// debtFloor is the least scaled token count (or barrier cap) a config
	// represents exactly. Deeper debt is folded into a synthetic barrier
	// that is stricter (see build).
	debtFloor = -(1 << 61)
	// satMax is where saturating projections stop counting: far above any
	// cap.
	satMax = 1 << 62
	// noFull is config.full before the bucket was ever at its cap.
	noFull = math.MinInt64
)

// offset returns now - origin in ns, 0 if now is earlier.
func (c *config) offset(now time.Time) int64 {
	d := now.Sub(c.origin)
	if d < 0 {
		return 0
	}
	return int64(d)
}

// since returns now - origin in ns, negative (saturating) if now is
// earlier: the offset a Cancel's grant instant is compared with.
func (c *config) since(now time.Time) int64 { return int64(now.Sub(c.origin)) }

// margin is how close to the cap a bucket level must come for a grant
// outstanding now to be denied its late Cancel: the most units one
// request asked for, scaled.
func (c *config) margin() int64 { return c.maxN.Load() * c.scale }

// nearCap reports whether level x (scaled, before a rewrite at offset e)
// lies within the margin of the cap: there, the bucket without an
// outstanding grant of up to maxN units would have hit the cap and lost
// refill, so giving that grant back later would be more than its absence
// left.
func (c *config) nearCap(x int64) bool { return x > c.capS-c.margin() }

// raiseMaxN records a grant of n units.
func (c *config) raiseMaxN(n int64) {
	for {
		m := c.maxN.Load()
		if m >= n || c.maxN.CompareAndSwap(m, n) {
			return
		}
	}
}

// noteFull records that the bucket was near its cap at offset e.
func (c *config) noteFull(e int64) {
	for {
		f := c.full.Load()
		if f >= e || c.full.CompareAndSwap(f, e) {
			return
		}
	}
}

// fullSince reports whether the bucket has been near its cap after the
// instant now (a grant's).
func (c *config) fullSince(now time.Time) bool {
	f := c.full.Load()
	return f != noFull && f > c.since(now)
}

// credit returns C(e) for 0 <= e <= eLimit (no overflow there).
func (c *config) credit(e int64) int64 {
	if c.period == 1 {
		return e * c.rate
	}
	return e / c.period * c.rate
}

// refill returns the scaled units added in (a, b], 0 <= a <= b, saturating
// at satMax.
func (c *config) refill(a, b int64) int64 {
	k := b/c.period - a/c.period
	if k == 0 {
		return 0
	}
	if k > satMax/c.rate {
		return satMax
	}
	return k * c.rate
}

// addSat returns x + r for r in [0, satMax], saturating at satMax.
func addSat(x, r int64) int64 {
	if x > 0 && r > satMax-x {
		return satMax
	}
	return min(x+r, satMax)
}

// solve returns the earliest offset t >= a with refill(a, t) >= d, for
// d > 0, or -1 if it lies beyond the int64 range.
func (c *config) solve(a, d int64) int64 {
	j := d / c.rate
	if d%c.rate != 0 {
		j++
	}
	k0 := a / c.period
	if j > math.MaxInt64-k0 {
		return -1
	}
	k := k0 + j
	if k > math.MaxInt64/c.period {
		return -1
	}
	return k * c.period
}

// project returns the scaled tokens at any offset e >= 0, given word value
// w, assuming nothing else happens: the first segment by the GCRA identity,
// later ones by refilling up to each segment's cap. It never writes and
// never allocates.
func (c *config) project(w, e int64) int64 {
	x, _ := c.projectNear(w, e, 0)
	return x
}

// projectNear is project, and reports whether the bucket came within
// margin of a cap on the way (at or before e).
func (c *config) projectNear(w, e, margin int64) (x int64, near bool) {
	x = -w
	t := int64(0)
	step := func(capS, r int64) {
		y := addSat(x, r)
		near = near || y > capS-margin
		x = min(capS, y)
	}
	for _, s := range c.segs {
		if e < s.end {
			step(s.capS, c.refill(t, e))
			return x, near
		}
		step(s.capS, c.refill(t, s.end-1))
		t = s.end - 1
	}
	step(c.limitS, c.refill(t, e))
	return x, near
}

// earliest returns the earliest offset t >= e at which the bucket, holding
// x scaled units at e and left alone, holds need units (need <= limitS), or
// -1 if that lies beyond the int64 range.
func (c *config) earliest(e, x, need int64) int64 {
	t := e
	for _, s := range c.segs {
		if s.end <= e {
			continue
		}
		if s.capS >= need {
			if x >= need {
				return t
			}
			if r := c.solve(t, need-x); r >= 0 && r < s.end {
				return r
			}
		}
		x = min(s.capS, addSat(x, c.refill(t, s.end-1)))
		t = s.end - 1
	}
	if x >= need {
		return t
	}
	return c.solve(t, need-x)
}

// at returns the time of offset t (>= 0), or of the last representable
// offset for -1.
func (c *config) at(t int64) time.Time {
	if t < 0 {
		t = math.MaxInt64
	}
	return c.origin.Add(time.Duration(t))
}

// successor builds the config that takes over from c at offset e, given
// c's frozen word w: the bucket advanced to e under c, then the rules of a
// parameter change from c.opts to o (tokens carry, capped at the new
// capacity; a cadence change restarts the period at e, otherwise the phase
// is kept), then the inherited usage (consumed at e, and barriers).
func (c *config) successor(w, e int64, o Options, inherited []entry, kind publication) *config {
	x, near := c.projectNear(w, e, c.margin())
	var (
		origin time.Time
		e0     int64
	)
	if c.opts.cadenceChanged(o) {
		origin = c.origin.Add(time.Duration(e))
	} else {
		k := e / c.period * c.period
		origin, e0 = c.origin.Add(time.Duration(k)), e-k
	}
	entries := make([]entry, 0, len(c.entries)+len(inherited))
	for _, en := range c.entries {
		if en.off > e {
			entries = append(entries, en)
		}
	}
	num := big.NewInt(x)
	if len(inherited) > 0 {
		sum := new(big.Int)
		for _, en := range inherited {
			sum.Add(sum, big.NewInt(en.units))
		}
		num.Sub(num, sum.Mul(sum, big.NewInt(c.scale)))
		entries = append(entries, inherited...)
	}
	n := build(o, origin, e0, num, c.scale, entries, kind)
	// The successor knows what c knew of the bucket near its cap, and
	// that it was at e if it came near since c's last rewrite; no late
	// Cancel crosses a publication (see Limiter.Cancel).
	n.maxN.Store(c.maxN.Load())
	full := int64(noFull)
	if f := c.full.Load(); f != noFull {
		full = f + int64(c.origin.Sub(n.origin))
	}
	switch {
	case kind == published && n.nearCap(min(-n.word.Load(), n.capS)):
		// It carried the bucket within the margin of the new cap: a
		// grant the predecessor made at e, given back, would have been
		// lost at that cap, and a grant of n at e cannot be told from
		// it: a Cancel at e gives nothing back either.
		full = max(full, e0+1)
	case kind == published || near:
		full = max(full, e0)
	}
	n.full.Store(full)
	return n
}

// publication says why a config is built.
type publication uint8

const (
	// rebuilt: same options and phase, for the hot path (a barrier
	// expired, or the credit clock grew large). Not a publication.
	rebuilt publication = iota
	// published by Reconfigure, Update or Inherit.
	published
	// sealed by Seal: terminal.
	sealedConfig
)

// build makes a config with options o and origin, whose bucket holds
// num/den tokens at offset e0 (C(e0) must be 0), rounded down to the new
// scale and capped at the capacity, with the barriers of entries that are
// still active after e0.
func build(o Options, origin time.Time, e0 int64, num *big.Int, den int64, entries []entry, kind publication) *config {
	c := &config{
		opts:      o,
		origin:    origin,
		unlimited: o.Unlimited,
		sealed:    kind == sealedConfig,
		limit:     o.TokenLimit,
		pubE:      -1,
	}
	if o.Continuous {
		c.rate, c.scale = continuousRate(o.TokensPerPeriod, int64(o.Period))
		c.period = 1
	} else {
		c.rate, c.scale, c.period = o.TokensPerPeriod, 1, int64(o.Period)
	}
	c.limitS = c.limit * c.scale

	tokens := new(big.Int).Mul(num, big.NewInt(c.scale))
	tokens.Div(tokens, big.NewInt(den)) // Euclidean: rounds down for den > 0
	if tokens.Cmp(big.NewInt(c.limitS)) > 0 {
		tokens.SetInt64(c.limitS)
	}

	var es []entry
	for _, en := range entries {
		if en.units <= 0 {
			continue
		}
		off := int64(en.until.Sub(origin))
		if off <= e0 {
			continue
		}
		es = append(es, entry{units: en.units, until: en.until, off: off})
	}
	slices.SortStableFunc(es, func(a, b entry) int {
		switch {
		case a.off < b.off:
			return -1
		case a.off > b.off:
			return 1
		}
		return 0
	})

	ends, caps := c.segments(es)
	floor := big.NewInt(debtFloor)
	if tokens.Cmp(floor) < 0 || (len(caps) > 0 && caps[0].Cmp(floor) < 0) {
		es = c.foldDeepDebt(e0, tokens, ends, caps, es)
		ends, caps = c.segments(es)
	}

	c.entries = es
	c.segs = make([]segment, len(ends))
	for i := range ends {
		c.segs[i] = segment{end: ends[i], capS: caps[i].Int64()}
	}
	c.capS = c.limitS
	if len(c.segs) > 0 {
		c.capS = c.segs[0].capS
	}
	c.eLimit = c.creditHorizon()
	if len(c.segs) > 0 {
		c.eLimit = min(c.eLimit, c.segs[0].end-1)
	}
	w := -tokens.Int64()
	c.full.Store(noFull)
	if kind == published {
		c.pubE, c.pubS = e0, min(c.capS, -w)
	}
	c.word.Store(w)
	return c
}

// segments returns the end offsets and scaled caps of the barrier segments
// of es (sorted by off).
func (c *config) segments(es []entry) (ends []int64, caps []*big.Int) {
	scale := big.NewInt(c.scale)
	for i := 0; i < len(es); {
		j := i
		held := new(big.Int)
		for _, en := range es[i:] {
			held.Add(held, big.NewInt(en.units))
		}
		for j < len(es) && es[j].off == es[i].off {
			j++
		}
		capS := new(big.Int).Sub(big.NewInt(c.limit), held)
		ends = append(ends, es[i].off)
		caps = append(caps, capS.Mul(capS, scale))
		i = j
	}
	return ends, caps
}

// creditHorizon returns the largest offset e with C(e) <= creditLimit.
func (c *config) creditHorizon() int64 {
	k := creditLimit / c.rate
	if k+1 > math.MaxInt64/c.period {
		return math.MaxInt64
	}
	return (k+1)*c.period - 1
}

// foldDeepDebt handles a bucket whose debt (tokens, or the cap of early
// barrier segments) lies below debtFloor, which one 64-bit word cannot
// hold. It is never looser than the exact bucket:
//
// Let m be the lowest of the tokens and the caps, ib the last segment whose
// cap is below the floor, t0 the end of that segment less one (e0 if
// none), and ut the later of that segment's end and the earliest offset at
// which m plus the refill since t0 reaches the floor. The exact bucket
// holds at least the floor at ut, so at least floor - step at ut-1 (step:
// the refill in (ut-1, ut]). Replacing every barrier that ends by ut with
// one synthetic barrier that caps the bucket at floor - step until ut (and
// raising the tokens to that cap) therefore admits nothing before ut (the
// cap is negative) and, from ut-1 on, holds no more than the exact bucket,
// after which both evolve alike. The synthetic barrier is handed over by
// Seal like any other.
func (c *config) foldDeepDebt(e0 int64, tokens *big.Int, ends []int64, caps []*big.Int, es []entry) []entry {
	floor := big.NewInt(debtFloor)
	m := new(big.Int).Set(tokens)
	ib := -1
	for i, capS := range caps {
		if capS.Cmp(floor) < 0 {
			ib = i
		}
		if capS.Cmp(m) < 0 {
			m.Set(capS)
		}
	}
	t0 := e0
	if ib >= 0 {
		t0 = ends[ib] - 1
	}
	ut := int64(math.MaxInt64) // never, unless the refill gets there
	if d := new(big.Int).Sub(floor, m); d.Sign() > 0 {
		if t := c.bigSolve(t0, d); t >= 0 {
			ut = t
		}
	} else {
		ut = t0
	}
	if ib >= 0 {
		ut = max(ut, ends[ib])
	}
	step := c.refill(ut-1, ut)
	// Whole tokens, one below the bound so the synthetic barrier holds
	// at least one unit.
	capTok := floorDiv(debtFloor-step, c.scale) - 1
	var kept []entry
	held := new(big.Int)
	for _, en := range es {
		if en.off > ut {
			kept = append(kept, en)
			held.Add(held, big.NewInt(en.units))
		}
	}
	units := new(big.Int).Sub(big.NewInt(c.limit-capTok), held)
	synthetic := entry{units: units.Int64(), until: c.origin.Add(time.Duration(ut)), off: ut}
	if capS := big.NewInt(capTok * c.scale); tokens.Cmp(capS) < 0 {
		tokens.Set(capS)
	}
	return append([]entry{synthetic}, kept...)
}

// bigSolve is solve for a deficit beyond int64.
func (c *config) bigSolve(a int64, d *big.Int) int64 {
	rate := big.NewInt(c.rate)
	j := new(big.Int).Add(d, big.NewInt(c.rate-1))
	j.Div(j, rate)
	k := j.Add(j, big.NewInt(a/c.period))
	t := k.Mul(k, big.NewInt(c.period))
	if !t.IsInt64() {
		return -1
	}
	return t.Int64()
}

// floorDiv returns x/s rounded down, for s > 0.
func floorDiv(x, s int64) int64 {
	q := x / s
	if x%s != 0 && x < 0 {
		q--
	}
	return q
}
