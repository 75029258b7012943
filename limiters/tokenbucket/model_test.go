package tokenbucket_test

import (
	"math/big"
	"slices"
	"time"

	"github.com/sluicerpc/sluice/limiters/tokenbucket"
	"github.com/sluicerpc/sluice/spi"
)

// model is the reference token bucket: the rules of the package written
// the plainest way, sequentially, with exact rationals and explicit
// timestamps, and no concern for speed, atomicity or overflow. The property
// tests require the real Limiter to make exactly its decisions.
//
// Rules, in order of application:
//   - refill in (a, b]: discrete: tokensPerPeriod at every boundary
//     origin + k·period in (a, b]; continuous: (b-a)·tokensPerPeriod/period;
//   - the cap at instant t is tokenLimit less the units of barriers with
//     t < Until; it holds at every instant, so advancing applies it at every
//     instant where it changes (Until-1ns) and at the target;
//   - TryAcquire grants iff the tokens are >= n (n <= tokenLimit), and the
//     refusal hint is the earliest instant at which that holds, found by
//     binary search over copies of the model;
//   - unlimited: grant always; tokens -= n if that stays >= 0, else they
//     drop to min(tokens, 0); Cancel does nothing;
//   - Cancel (at the instant of the grant, the latest instant here):
//     tokens = min(cap, tokens + n), and at the instant of the last
//     publication (Reconfigure or Inherit) no more than it carried, and
//     nothing if that publication carried the bucket within maxN tokens
//     of its cap (maxN: the most tokens one TryAcquire asked for, up to
//     the limit);
//   - Reconfigure to the options in force: nothing at all;
//   - Reconfigure: advance under the old options; tokens = min(tokens, new
//     limit), rounded down to the new resolution (whole tokens in discrete
//     mode, 1/P token in continuous mode, P = period/gcd(period,
//     tokensPerPeriod)); a change of period, tokensPerPeriod or mode moves
//     the origin to now;
//   - Seal: own debt = limit - floor(tokens) - active barrier units, until
//     the earliest instant the bucket is full again; then the active
//     barriers in order of Until;
//   - Inherit: tokens -= sum of units; entries with Until > now become
//     barriers.
type model struct {
	opts     tokenbucket.Options
	origin   time.Time
	last     time.Time
	tokens   *big.Rat
	barriers []spi.Usage
	sealed   bool
	// the instant of the last publication and the tokens it carried
	pubAt     time.Time
	pubTokens *big.Rat
	maxN      int64
	// a Cancel at or before blockThrough gives nothing back
	blockThrough time.Time
}

func newModel(o tokenbucket.Options, now time.Time) *model {
	return &model{opts: o, origin: now, last: now, tokens: new(big.Rat).SetInt64(o.TokenLimit)}
}

func (m *model) clone() *model {
	c := *m
	c.tokens = new(big.Rat).Set(m.tokens)
	c.barriers = slices.Clone(m.barriers)
	if m.pubTokens != nil {
		c.pubTokens = new(big.Rat).Set(m.pubTokens)
	}
	return &c
}

func ratInt(v int64) *big.Rat { return new(big.Rat).SetInt64(v) }

func ratFloor(r *big.Rat) int64 {
	return new(big.Int).Div(r.Num(), r.Denom()).Int64()
}

func (m *model) refill(a, b time.Time) *big.Rat {
	if !a.Before(b) {
		return new(big.Rat)
	}
	if m.opts.Continuous {
		return new(big.Rat).Mul(ratInt(int64(b.Sub(a))), big.NewRat(m.opts.TokensPerPeriod, int64(m.opts.Period)))
	}
	k := func(t time.Time) int64 { return int64(t.Sub(m.origin) / m.opts.Period) }
	return new(big.Rat).Mul(ratInt(k(b)-k(a)), ratInt(m.opts.TokensPerPeriod))
}

func (m *model) capAt(t time.Time) int64 {
	c := m.opts.TokenLimit
	for _, b := range m.barriers {
		if t.Before(b.Until) {
			c -= b.Units
		}
	}
	return c
}

func (m *model) step(to time.Time) {
	m.tokens.Add(m.tokens, m.refill(m.last, to))
	if c := ratInt(m.capAt(to)); m.tokens.Cmp(c) > 0 {
		m.tokens.Set(c)
	}
	m.last = to
}

func (m *model) advance(t time.Time) {
	if !t.After(m.last) {
		return
	}
	for _, b := range m.barriers { // sorted by Until
		if p := b.Until.Add(-1); p.After(m.last) && p.Before(t) {
			m.step(p)
		}
	}
	m.step(t)
	m.barriers = slices.DeleteFunc(m.barriers, func(b spi.Usage) bool { return !t.Before(b.Until) })
}

// earliest returns the first instant >= t at which the bucket, left alone,
// holds at least n tokens; ok is false if that is more than horizon away.
func (m *model) earliest(t time.Time, n int64) (at time.Time, ok bool) {
	const horizon = int64(1) << 50
	holds := func(d int64) bool {
		c := m.clone()
		c.advance(t.Add(time.Duration(d)))
		return c.tokens.Cmp(ratInt(n)) >= 0
	}
	if !holds(horizon) {
		return time.Time{}, false
	}
	lo, hi := int64(-1), horizon // holds(lo) is false (or lo is before t), holds(hi) is true
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if holds(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return t.Add(time.Duration(hi)), true
}

func (m *model) tryAcquire(t time.Time, n int64) spi.Decision {
	if n == 0 {
		return spi.Grant()
	}
	if m.sealed {
		return spi.RefuseNever()
	}
	m.advance(t)
	if n <= m.opts.TokenLimit {
		m.maxN = max(m.maxN, n) // granted, or refused for lack of tokens
	}
	if m.opts.Unlimited {
		if m.tokens.Cmp(ratInt(n)) >= 0 {
			m.tokens.Sub(m.tokens, ratInt(n))
		} else if m.tokens.Sign() > 0 {
			m.tokens.SetInt64(0)
		}
		return spi.Grant()
	}
	if n > m.opts.TokenLimit {
		return spi.RefuseNever()
	}
	if m.tokens.Cmp(ratInt(n)) >= 0 {
		m.tokens.Sub(m.tokens, ratInt(n))
		return spi.Grant()
	}
	at, ok := m.earliest(t, n)
	if !ok {
		panic("model: refusal hint beyond the model's horizon")
	}
	return spi.RefuseUntil(at)
}

func (m *model) cancel(t time.Time, n int64) {
	if m.sealed || m.opts.Unlimited {
		return
	}
	m.advance(t)
	next := new(big.Rat).Add(m.tokens, ratInt(n))
	if c := ratInt(m.capAt(t)); next.Cmp(c) > 0 {
		next.Set(c)
	}
	if m.pubTokens != nil && t.Equal(m.pubAt) && next.Cmp(m.pubTokens) > 0 {
		next.Set(m.pubTokens)
	}
	if next.Cmp(m.tokens) <= 0 || !t.After(m.blockThrough) {
		return
	}
	m.tokens = next
}

func (m *model) published(t time.Time) {
	m.pubAt, m.pubTokens = t, new(big.Rat).Set(m.tokens)
	near := new(big.Rat).Add(m.tokens, ratInt(m.maxN))
	if near.Cmp(ratInt(m.capAt(t))) > 0 {
		m.blockThrough = t
	}
}

func modelScale(o tokenbucket.Options) int64 {
	if !o.Continuous {
		return 1
	}
	p, q := int64(o.Period), o.TokensPerPeriod
	for q != 0 {
		p, q = q, p%q
	}
	return int64(o.Period) / p
}

func (m *model) reconfigure(t time.Time, o tokenbucket.Options) {
	// The options in force are published too: nothing changes but the
	// publication instant (see Limiter.Update).
	m.advance(t)
	if l := ratInt(o.TokenLimit); m.tokens.Cmp(l) > 0 {
		m.tokens.Set(l)
	}
	s := ratInt(modelScale(o))
	scaled := new(big.Rat).Mul(m.tokens, s)
	m.tokens.Quo(ratInt(ratFloor(scaled)), s)
	if o.Period != m.opts.Period || o.TokensPerPeriod != m.opts.TokensPerPeriod || o.Continuous != m.opts.Continuous {
		m.origin = t
	}
	m.opts = o
	if c := ratInt(m.capAt(t)); m.tokens.Cmp(c) > 0 {
		m.tokens.Set(c) // the bucket never holds more than the cap
	}
	m.published(t)
}

func (m *model) seal(t time.Time) []spi.Usage {
	m.advance(t)
	debt := m.opts.TokenLimit - ratFloor(m.tokens)
	for _, b := range m.barriers {
		debt -= b.Units
	}
	var usage []spi.Usage
	if debt > 0 {
		full, ok := m.earliest(t, m.opts.TokenLimit)
		if !ok {
			panic("model: bucket not full within the model's horizon")
		}
		usage = append(usage, spi.Usage{Units: debt, Until: full})
	}
	usage = append(usage, m.barriers...)
	m.sealed = true
	return usage
}

func (m *model) inherit(t time.Time, usage []spi.Usage) {
	if !slices.ContainsFunc(usage, func(u spi.Usage) bool { return u.Units > 0 }) {
		return // nothing to take over
	}
	m.advance(t)
	for _, u := range usage {
		m.tokens.Sub(m.tokens, ratInt(u.Units))
		if u.Units > 0 && u.Until.After(t) {
			m.barriers = append(m.barriers, u)
		}
	}
	slices.SortStableFunc(m.barriers, func(a, b spi.Usage) int { return a.Until.Compare(b.Until) })
	m.published(t)
}

func (m *model) snapshot(t time.Time) spi.Snapshot {
	m.advance(t)
	tokens := ratFloor(m.tokens)
	avail := max(tokens, 0)
	if m.sealed {
		avail = 0
	}
	return spi.Snapshot{Kind: "tokenbucket", Limit: m.opts.TokenLimit, InUse: m.opts.TokenLimit - tokens, Available: avail}
}
