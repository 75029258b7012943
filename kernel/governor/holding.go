package governor

import (
	"context"
	"fmt"
)

// Part names one kind of unit a [Holding] takes.
type Part uint8

const (
	PartDecode      Part = iota // a decode credit (one unit of Decodes)
	PartRetained                // retained compressed bytes
	PartDecoded                 // decoded bytes
	PartStream                  // pre-admission stream bytes
	PartLargeDecode             // a place among the large decodes (Governor.Large)
	partCount
)

// String names the part as the budget it draws on.
func (p Part) String() string {
	switch p {
	case PartDecode:
		return "decodes"
	case PartRetained:
		return "retained compressed bytes"
	case PartDecoded:
		return "decoded bytes"
	case PartStream:
		return "pre-admission stream bytes"
	case PartLargeDecode:
		return "large decodes"
	}
	return fmt.Sprintf("Part(%d)", uint8(p))
}

// Holding is everything one request holds from the governor: its call
// reservation (Call: Reserve, Activate, Release) and the units of each
// budget its decode pays for. It is caller-owned storage (the server keeps
// it in the pooled per-call state), so taking and releasing allocate
// nothing. Ownership moves with the request: whoever has the request has
// its Holding, and one goroutine at a time uses it.
//
// Each part is taken before the work it pays for (Take), may be given back
// early when that work is done (Give), and whatever is still held is given
// back by Release, exactly once: a refusal at any step releases what the
// steps before it took. After Release the Holding is empty and may be
// reused (Call needs its own Reset, see Call).
type Holding struct {
	// Call is the request's call reservation.
	Call Call

	g     *Governor
	held  [partCount]int64
	share *Share // the connection's account, nil for none (SetShare)
}

// SetShare makes the Holding's byte takes subject to, and counted in, the
// connection's Share (see Share); nil for none. Set it before the first
// Take; Reset clears it.
func (h *Holding) SetShare(s *Share) { h.share = s }

func (g *Governor) budget(p Part) *Budget {
	switch p {
	case PartDecode:
		return g.Decodes
	case PartRetained:
		return g.Retained
	case PartDecoded:
		return g.Decoded
	case PartStream:
		return g.Stream
	case PartLargeDecode:
		return g.Large
	}
	panic(fmt.Sprintf("governor: unknown part %d", p))
}

// Take takes n >= 1 more units of part from g's budget and reports whether
// it did; a refusal takes nothing. Every part of one Holding comes from the
// same Governor.
func (h *Holding) Take(g *Governor, p Part, n int64) bool {
	if h.g != nil && h.g != g {
		panic("governor: Holding.Take from a second Governor")
	}
	b := g.budget(p)
	if h.share != nil && h.share.over(b, p, n) {
		return false
	}
	if !b.TryAcquire(n) {
		return false
	}
	h.g = g
	h.add(p, n)
	return true
}

// Wait is Take that waits for the units while the budget is short, until
// ctx ends (Budget.Acquire): nil with the units held, or ctx's error with
// nothing taken.
func (h *Holding) Wait(ctx context.Context, g *Governor, p Part, n int64) error {
	if h.g != nil && h.g != g {
		panic("governor: Holding.Wait from a second Governor")
	}
	if err := g.budget(p).Acquire(ctx, n); err != nil {
		return err
	}
	h.g = g
	h.add(p, n)
	return nil
}

// Give gives back n units of part early (the decode ended, say); giving
// back more than the Holding holds panics.
func (h *Holding) Give(p Part, n int64) {
	if n > h.held[p] {
		panic(fmt.Sprintf("governor: Holding.Give(%v, %d) with %d held", p, n, h.held[p]))
	}
	if n == 0 {
		return
	}
	h.g.budget(p).Release(n)
	h.add(p, -n)
}

// add counts n units of p (negative: given back) in the Holding and its
// Share.
func (h *Holding) add(p Part, n int64) {
	h.held[p] += n
	if h.share != nil {
		h.share.held[p].Add(n)
	}
}

// Held is how many units of part the Holding holds.
func (h *Holding) Held(p Part) int64 { return h.held[p] }

// Release gives back every budget unit still held and the call
// reservation (Call.Release), each exactly once; a second Release gives
// back nothing. It reports whether anything was given back.
func (h *Holding) Release() bool {
	any := h.Call.Release()
	for p := range partCount {
		if n := h.held[p]; n > 0 {
			h.g.budget(p).Release(n)
			h.add(p, -n)
			any = true
		}
	}
	return any
}

// Reset makes a released Holding fresh for reuse (see Call.Reset). It
// panics if budget units are still held.
func (h *Holding) Reset() {
	for p := range partCount {
		if h.held[p] != 0 {
			panic(fmt.Sprintf("governor: Holding.Reset with %d %v held (Release it first)", h.held[p], Part(p)))
		}
	}
	h.Call.Reset()
	h.g, h.share = nil, nil
}
