package governor_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/kernel/governor"
)

func TestGovernorLimits(t *testing.T) {
	g, err := governor.New(governor.Limits{Decodes: 2})
	require.NoError(t, err)
	d := governor.DefaultLimits()
	assert.Equal(t, governor.Limits{Decodes: 2, RetainedBytes: d.RetainedBytes, DecodedBytes: d.DecodedBytes, StreamBytes: d.StreamBytes}, g.Limits())
	_, err = governor.New(governor.Limits{Decodes: -1, DecodedBytes: -2})
	assert.EqualError(t, err, "governor: Limits.Decodes must not be negative, got -1\ngovernor: Limits.DecodedBytes must not be negative, got -2")
	require.Error(t, g.SetLimits(governor.Limits{StreamBytes: -1}))
	assert.Equal(t, int64(2), g.Limits().Decodes, "an invalid SetLimits changes nothing")
	require.NoError(t, g.SetLimits(governor.Limits{Decodes: 5}))
	assert.Equal(t, int64(5), g.Limits().Decodes)
}

// A Holding takes each part before its work, gives parts back early or at
// Release, and Release gives back everything still held exactly once,
// together with the call reservation.
func TestHoldingReleasesEverythingOnce(t *testing.T) {
	g, err := governor.New(governor.Limits{Decodes: 1, RetainedBytes: 100, DecodedBytes: 1000})
	require.NoError(t, err)
	conn, srv := governor.NewCallCapacity(1), governor.NewCallCapacity(1)
	var h governor.Holding
	ok, _ := h.Call.Reserve(conn, srv)
	require.True(t, ok)
	require.True(t, h.Take(g, governor.PartRetained, 80))
	require.True(t, h.Take(g, governor.PartDecode, 1))
	require.True(t, h.Take(g, governor.PartDecoded, 600))

	var other governor.Holding
	assert.False(t, other.Take(g, governor.PartDecode, 1), "the only decode credit is held")
	assert.False(t, other.Take(g, governor.PartRetained, 21), "a refusal takes nothing")
	assert.Zero(t, other.Held(governor.PartRetained))

	h.Give(governor.PartDecode, 1) // the decode ended
	h.Give(governor.PartRetained, 80)
	assert.True(t, other.Take(g, governor.PartDecode, 1))
	other.Release()

	assert.True(t, h.Release())
	assert.False(t, h.Release(), "a second Release gives back nothing")
	assert.Equal(t, governor.Snapshot{
		Decodes:  governor.BudgetSnapshot{Limit: 1},
		Retained: governor.BudgetSnapshot{Limit: 100},
		Decoded:  governor.BudgetSnapshot{Limit: 1000},
		Stream:   governor.BudgetSnapshot{Limit: governor.DefaultLimits().StreamBytes},
	}, g.Snapshot())
	assert.Equal(t, governor.CallCapacitySnapshot{Capacity: 1}, srv.Snapshot())
	h.Reset()
	ok, _ = h.Call.Reserve(conn, srv)
	assert.True(t, ok, "a reset Holding is reusable")
	h.Release()
}

func TestHoldingMisuse(t *testing.T) {
	g1, _ := governor.New(governor.Limits{})
	g2, _ := governor.New(governor.Limits{})
	var h governor.Holding
	require.True(t, h.Take(g1, governor.PartDecoded, 10))
	assert.PanicsWithValue(t, "governor: Holding.Take from a second Governor", func() { h.Take(g2, governor.PartDecoded, 1) })
	assert.PanicsWithValue(t, "governor: Holding.Give(decoded bytes, 11) with 10 held", func() { h.Give(governor.PartDecoded, 11) })
	assert.PanicsWithValue(t, "governor: Holding.Reset with 10 decoded bytes held (Release it first)", func() { h.Reset() })
	h.Release()
	h.Reset()
}
