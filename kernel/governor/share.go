package governor

import "sync/atomic"

// Share is one connection's account of the byte budgets (retained,
// decoded and pre-admission stream bytes): what the Holdings of its
// requests and streams hold together. It keeps a few connections from
// holding a whole budget, which would starve every other connection's
// compressed traffic (eight connections sending bombs kept the decoded
// budget full). The rule, applied by [Holding.Take] to a Holding given a
// Share:
//
//   - a budget is contended when the units left after the take would be
//     below a quarter of its limit;
//   - under contention, a take that would bring the connection's units of
//     that budget above its fair share (the limit over the open Shares)
//     is refused, as when the budget is full.
//
// Without contention a connection may use the whole budget; under it,
// what connections over their share give back goes to those under it. A
// single request larger than the share is refused under contention too:
// the share is what fairness costs. The rule reads atomic words without a
// lock, so racing takes may each pass it (it is soft); the budget's own
// limit stays hard.
//
// Open a Share per connection with [Governor.OpenShare] and Close it
// when the connection ends; a Share is safe for concurrent use.
type Share struct {
	g      *Governor
	held   [partCount]atomic.Int64
	closed atomic.Bool
}

// OpenShare opens the account of a new connection; the fair share of
// every budget is its limit over the Shares open.
func (g *Governor) OpenShare() *Share {
	g.shares.Add(1)
	return &Share{g: g}
}

// Close ends the account: the connection no longer counts among those
// sharing the budgets. Units still held (requests finishing) keep being
// given back through it. A second Close does nothing.
func (s *Share) Close() {
	if s.closed.CompareAndSwap(false, true) {
		s.g.shares.Add(-1)
	}
}

// Held is how many units of part the connection's Holdings hold now.
func (s *Share) Held(p Part) int64 { return s.held[p].Load() }

// over reports whether taking n more units of p's budget b would be
// refused by the fair-share rule.
func (s *Share) over(b *Budget, p Part, n int64) bool {
	if p == PartDecode || p == PartLargeDecode {
		return false // decode credits are waited for in arrival order
	}
	used, limit := b.used.Load(), b.limit.Load()
	if limit-used-n >= limit/4 {
		return false // no contention
	}
	share := limit / max(s.g.shares.Load(), 1)
	return s.held[p].Load()+n > share
}
