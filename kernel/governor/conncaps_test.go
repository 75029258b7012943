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

// TestOverShareGivesFreedSlotsToConnectionsUnderTheirShare (issue 25
// section 2): two connections hold all of a server's 8 calls (4 each, their
// bound). A third connection is refused while the server is full; once a
// slot frees, the server is contended (1 free, below the bound of 4), the
// connections holding their share (8 / 3 = 2) or more are refused it, and
// the newcomer gets it.
func TestOverShareGivesFreedSlotsToConnectionsUnderTheirShare(t *testing.T) {
	cc := governor.NewConnCapacities(4)
	server := governor.NewCallCapacity(8)
	a, b := cc.Open(), cc.Open()
	var calls [8]governor.Call
	for i := range calls {
		conn := a
		if i >= 4 {
			conn = b
		}
		require.False(t, cc.OverShare(conn, server), "call %d: the server has room", i)
		ok, _ := calls[i].Reserve(conn, server)
		require.True(t, ok)
	}
	c := cc.Open()
	require.False(t, cc.OverShare(c, server), "a full server is not a share matter")
	var cCall governor.Call
	ok, level := cCall.Reserve(c, server)
	require.False(t, ok)
	require.Equal(t, governor.LevelServer, level)

	require.True(t, calls[0].Release())
	require.True(t, cc.OverShare(a, server), "a holds 3, over its share of 2, while 1 of 8 is free")
	require.True(t, cc.OverShare(b, server), "b holds 4")
	require.False(t, cc.OverShare(c, server), "c holds nothing")
	ok, _ = cCall.Reserve(c, server)
	require.True(t, ok)

	// A lone connection is never held to a share: its share is the server.
	solo, srv := governor.NewConnCapacities(8), governor.NewCallCapacity(8)
	one := solo.Open()
	var mine [8]governor.Call
	for i := range mine {
		require.False(t, solo.OverShare(one, srv), "call %d", i)
		ok, _ := mine[i].Reserve(one, srv)
		require.True(t, ok)
	}
	for i := range mine {
		mine[i].Release()
	}
	solo.Close(one)
	for i := 1; i < 4; i++ {
		calls[i].Release()
	}
	for i := 4; i < 8; i++ {
		calls[i].Release()
	}
	cCall.Release()
	cc.Close(a)
	cc.Close(b)
	cc.Close(c)
}
