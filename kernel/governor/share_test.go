package governor_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/kernel/governor"
)

// TestShareKeepsAFewConnectionsFromHoldingABudget (issue 25 section 2,
// decoded-bytes starvation): three connections share a decoded budget of
// 100. Without contention one connection may take most of it; once a take
// would leave less than a quarter, a connection over its share (100 / 3 =
// 33) is refused what one under it still gets, and the refused units are
// given back to whoever is under their share when the others finish.
func TestShareKeepsAFewConnectionsFromHoldingABudget(t *testing.T) {
	g, err := governor.New(governor.Limits{DecodedBytes: 100})
	require.NoError(t, err)
	a, b, c := g.OpenShare(), g.OpenShare(), g.OpenShare()
	holding := func(s *governor.Share) *governor.Holding {
		h := &governor.Holding{}
		h.SetShare(s)
		return h
	}
	a1, a2, b1 := holding(a), holding(a), holding(b)
	require.True(t, a1.Take(g, governor.PartDecoded, 30), "70 left: no contention")
	require.True(t, a2.Take(g, governor.PartDecoded, 30), "40 left: no contention, a may exceed its share")
	require.True(t, b1.Take(g, governor.PartDecoded, 30), "10 left: contended, but b holds 30 of its 33")
	require.Equal(t, int64(60), a.Held(governor.PartDecoded))

	a3, c1 := holding(a), holding(c)
	require.False(t, a3.Take(g, governor.PartDecoded, 5), "a holds 60, over its share")
	require.Zero(t, a3.Held(governor.PartDecoded))
	require.True(t, c1.Take(g, governor.PartDecoded, 5), "c holds nothing")
	require.False(t, holding(c).Take(g, governor.PartDecoded, 30), "c's 5 + 30 is over its share")

	// Without Shares the budget alone decides, as before.
	require.True(t, (&governor.Holding{}).Take(g, governor.PartDecoded, 5))

	// Given back, the units count for nobody; Close leaves the sharing.
	a1.Release()
	require.Equal(t, int64(30), a.Held(governor.PartDecoded))
	b.Close()
	b.Close()
	a2.Release()
	b1.Release()
	c1.Release()
	require.Zero(t, a.Held(governor.PartDecoded)+b.Held(governor.PartDecoded)+c.Held(governor.PartDecoded))

	// Two shares open now: 50 each. a takes 70 while there is room, then
	// is over its share when the budget is contended.
	h := holding(a)
	require.True(t, h.Take(g, governor.PartDecoded, 70), "with 5 held elsewhere, 25 left after: not below a quarter")
	require.False(t, holding(a).Take(g, governor.PartDecoded, 10), "contended; a holds 70 of its 50")
	require.True(t, holding(c).Take(g, governor.PartDecoded, 10), "c holds nothing")
}
