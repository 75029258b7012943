package governor

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCallReleaseDuringActivation replays deterministically the
// interleaving a race produces only rarely: Release runs after Activate has
// moved the counters but before it publishes the active state. The Release
// wins (true), Activate completes the release and reports false, and the
// capacity is returned exactly once.
func TestCallReleaseDuringActivation(t *testing.T) {
	conn, srv := NewCallCapacity(1), NewCallCapacity(1)
	var c Call
	ok, _ := c.Reserve(conn, srv)
	require.True(t, ok)

	// First half of Activate.
	require.True(t, c.state.CompareAndSwap(callReserved, callActivating))
	conn.Activate()
	srv.Activate()

	assert.True(t, c.Release(), "the Release during activation wins")
	assert.False(t, c.Release())
	assert.Equal(t, callReleasePending, c.state.Load())
	assert.Equal(t, CallCapacitySnapshot{Capacity: 1, Active: 1}, conn.Snapshot(), "not yet returned")
	assert.False(t, c.Activate(), "a pending release is not activatable")

	// Second half of Activate.
	assert.False(t, c.finishActivate())
	assert.Equal(t, callReleased, c.state.Load())
	assert.Equal(t, CallCapacitySnapshot{Capacity: 1}, conn.Snapshot())
	assert.Equal(t, CallCapacitySnapshot{Capacity: 1}, srv.Snapshot())
	assert.False(t, c.Release())
	c.Reset()
}

func TestCallStateNames(t *testing.T) {
	for s := callNone; s <= callReleased; s++ {
		assert.NotContains(t, callStateName(s), "state(")
	}
	assert.Equal(t, "state(42)", callStateName(42))
	assert.PanicsWithValue(t, "governor: Call.Activate on a Call in state activating (Activate called twice)", func() {
		var c Call
		c.state.Store(callActivating)
		c.Activate()
	})
}
