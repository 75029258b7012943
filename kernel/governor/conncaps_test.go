package governor_test

import (
	"sync"
	"testing"

	"github.com/sluicerpc/sluice/kernel/governor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestConnCapacitiesOpenSetClose(t *testing.T) {
	cc := governor.NewConnCapacities(2)
	assert.Equal(t, 2, cc.Capacity())
	assert.Zero(t, cc.Len())

	a, b := cc.Open(), cc.Open()
	require.NotSame(t, a, b)
	assert.Equal(t, 2, cc.Len())
	assert.Equal(t, snap(2, 0, 0), a.Snapshot())

	// Usage on one connection does not affect another.
	require.True(t, a.TryReserve())
	require.True(t, a.TryReserve())
	require.False(t, a.TryReserve())
	require.True(t, b.TryReserve())

	// A bound change reaches every registered connection without revoking.
	cc.SetCapacity(1)
	assert.Equal(t, 1, cc.Capacity())
	assert.Equal(t, snap(1, 0, 2), a.Snapshot())
	assert.Equal(t, snap(1, 0, 1), b.Snapshot())
	assert.False(t, b.TryReserve())

	// A closed connection no longer follows the bound.
	cc.Close(a)
	assert.Equal(t, 1, cc.Len())
	cc.SetCapacity(5)
	assert.Equal(t, snap(1, 0, 2), a.Snapshot())
	assert.Equal(t, snap(5, 0, 1), b.Snapshot())
	// Calls still holding a closed connection's capacity release into it.
	a.ReleaseReserved()
	a.ReleaseReserved()
	assert.Equal(t, snap(1, 0, 0), a.Snapshot())

	// New connections get the current bound.
	assert.Equal(t, snap(5, 0, 0), cc.Open().Snapshot())
}

func TestConnCapacitiesMisusePanics(t *testing.T) {
	cc := governor.NewConnCapacities(1)
	c := cc.Open()
	cc.Close(c)
	const msg = "governor: ConnCapacities.Close of a CallCapacity not opened by it, or closed twice"
	assert.PanicsWithValue(t, msg, func() { cc.Close(c) })
	assert.PanicsWithValue(t, msg, func() { cc.Close(governor.NewCallCapacity(1)) })
	assert.PanicsWithValue(t, msg, func() { governor.NewConnCapacities(3).Close(cc.Open()) })
	assert.PanicsWithValue(t, "governor: NewConnCapacities: call capacity 0 out of range [1, 2097151]", func() { governor.NewConnCapacities(0) })
	assert.PanicsWithValue(t, "governor: ConnCapacities.SetCapacity: call capacity -3 out of range [1, 2097151]", func() { cc.SetCapacity(-3) })
	assert.Equal(t, 1, cc.Capacity(), "a refused bound changes nothing")
}

// TestConnCapacitiesOpenSetInterleavings checks both orders of an Open and
// a SetCapacity: either the new connection is registered before the bound
// changes and SetCapacity updates it, or it reads the new bound.
func TestConnCapacitiesOpenSetInterleavings(t *testing.T) {
	tests := []struct {
		name  string
		steps []string
	}{
		{"open then set", []string{"open", "set"}},
		{"set then open", []string{"set", "open"}},
		{"open set open set", []string{"open", "set", "open", "set"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cc := governor.NewConnCapacities(4)
			var opened []*governor.CallCapacity
			next := 4
			for _, s := range tt.steps {
				switch s {
				case "open":
					opened = append(opened, cc.Open())
				case "set":
					next += 3
					cc.SetCapacity(next)
				}
			}
			for i, c := range opened {
				assert.Equal(t, next, c.Snapshot().Capacity, "connection %d", i)
			}
		})
	}
}

// TestConnCapacitiesConvergeUnderRace opens and closes connections while
// the bound changes; once every writer is done, every open connection has
// the final bound.
func TestConnCapacitiesConvergeUnderRace(t *testing.T) {
	cc := governor.NewConnCapacities(1)
	const openers, perOpener = 8, 200
	kept := make([][]*governor.CallCapacity, openers)
	var wg sync.WaitGroup
	for g := range openers {
		wg.Go(func() {
			for i := range perOpener {
				c := cc.Open()
				if i%2 == 0 {
					cc.Close(c)
					continue
				}
				kept[g] = append(kept[g], c)
			}
		})
	}
	for range 2 {
		wg.Go(func() {
			for i := range 300 {
				cc.SetCapacity(1 + i%17)
			}
		})
	}
	wg.Wait()
	final := cc.Capacity()
	n := 0
	for _, cs := range kept {
		for _, c := range cs {
			require.Equal(t, final, c.Snapshot().Capacity)
			n++
		}
	}
	assert.Equal(t, openers*perOpener/2, n)
	assert.Equal(t, n, cc.Len())
}
