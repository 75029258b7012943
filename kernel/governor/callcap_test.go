package governor_test

import (
	"fmt"
	"testing"

	"github.com/sluicerpc/sluice/kernel/governor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

type capOp int

const (
	opReserve capOp = iota
	opActivate
	opReleaseReserved
	opReleaseActive
	opSetCapacity
)

func (o capOp) String() string {
	return [...]string{"reserve", "activate", "releaseReserved", "releaseActive", "setCapacity"}[o]
}

type capStep struct {
	op   capOp
	n    int  // for opSetCapacity
	want bool // for opReserve
	snap governor.CallCapacitySnapshot
}

func snap(capacity, active, reserved int) governor.CallCapacitySnapshot {
	return governor.CallCapacitySnapshot{Capacity: capacity, Active: active, Reserved: reserved}
}

func applyCapStep(t *testing.T, c *governor.CallCapacity, i int, s capStep) {
	t.Helper()
	switch s.op {
	case opReserve:
		assert.Equal(t, s.want, c.TryReserve(), "step %d: %v", i, s.op)
	case opActivate:
		c.Activate()
	case opReleaseReserved:
		c.ReleaseReserved()
	case opReleaseActive:
		c.ReleaseActive()
	case opSetCapacity:
		c.SetCapacity(s.n)
	}
	assert.Equal(t, s.snap, c.Snapshot(), "step %d: %v", i, s.op)
}

func TestCallCapacityScripts(t *testing.T) {
	tests := []struct {
		name     string
		capacity int
		steps    []capStep
	}{
		{"reserve up to capacity then refuse", 2, []capStep{
			{op: opReserve, want: true, snap: snap(2, 0, 1)},
			{op: opReserve, want: true, snap: snap(2, 0, 2)},
			{op: opReserve, want: false, snap: snap(2, 0, 2)},
		}},
		{"activate keeps usage, refuses while full", 2, []capStep{
			{op: opReserve, want: true, snap: snap(2, 0, 1)},
			{op: opActivate, snap: snap(2, 1, 0)},
			{op: opReserve, want: true, snap: snap(2, 1, 1)},
			{op: opReserve, want: false, snap: snap(2, 1, 1)},
			{op: opActivate, snap: snap(2, 2, 0)},
			{op: opReserve, want: false, snap: snap(2, 2, 0)},
		}},
		{"release from both states", 2, []capStep{
			{op: opReserve, want: true, snap: snap(2, 0, 1)},
			{op: opReserve, want: true, snap: snap(2, 0, 2)},
			{op: opActivate, snap: snap(2, 1, 1)},
			{op: opReleaseReserved, snap: snap(2, 1, 0)},
			{op: opReserve, want: true, snap: snap(2, 1, 1)},
			{op: opReleaseActive, snap: snap(2, 0, 1)},
			{op: opReleaseReserved, snap: snap(2, 0, 0)},
		}},
		{"shrink below usage revokes nothing and refuses until under", 4, []capStep{
			{op: opReserve, want: true, snap: snap(4, 0, 1)},
			{op: opReserve, want: true, snap: snap(4, 0, 2)},
			{op: opReserve, want: true, snap: snap(4, 0, 3)},
			{op: opActivate, snap: snap(4, 1, 2)},
			{op: opSetCapacity, n: 1, snap: snap(1, 1, 2)},
			{op: opReserve, want: false, snap: snap(1, 1, 2)},
			{op: opActivate, snap: snap(1, 2, 1)}, // activation of a granted reservation is still allowed
			{op: opReleaseReserved, snap: snap(1, 2, 0)},
			{op: opReserve, want: false, snap: snap(1, 2, 0)},
			{op: opReleaseActive, snap: snap(1, 1, 0)},
			{op: opReserve, want: false, snap: snap(1, 1, 0)}, // usage == bound: still full
			{op: opReleaseActive, snap: snap(1, 0, 0)},
			{op: opReserve, want: true, snap: snap(1, 0, 1)},
			{op: opReserve, want: false, snap: snap(1, 0, 1)},
		}},
		{"grow admits exactly the difference", 2, []capStep{
			{op: opReserve, want: true, snap: snap(2, 0, 1)},
			{op: opReserve, want: true, snap: snap(2, 0, 2)},
			{op: opReserve, want: false, snap: snap(2, 0, 2)},
			{op: opSetCapacity, n: 5, snap: snap(5, 0, 2)},
			{op: opReserve, want: true, snap: snap(5, 0, 3)},
			{op: opReserve, want: true, snap: snap(5, 0, 4)},
			{op: opReserve, want: true, snap: snap(5, 0, 5)},
			{op: opReserve, want: false, snap: snap(5, 0, 5)},
		}},
		{"max capacity", governor.MaxCallCapacity, []capStep{
			{op: opReserve, want: true, snap: snap(governor.MaxCallCapacity, 0, 1)},
			{op: opActivate, snap: snap(governor.MaxCallCapacity, 1, 0)},
			{op: opSetCapacity, n: 1, snap: snap(1, 1, 0)},
			{op: opReserve, want: false, snap: snap(1, 1, 0)},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := governor.NewCallCapacity(tt.capacity)
			require.Equal(t, snap(tt.capacity, 0, 0), c.Snapshot())
			for i, s := range tt.steps {
				applyCapStep(t, c, i, s)
			}
		})
	}
}

func TestCallCapacityFillsMax(t *testing.T) {
	// The 21-bit fields hold MaxCallCapacity without spilling into their
	// neighbours.
	c := governor.NewCallCapacity(governor.MaxCallCapacity)
	for range governor.MaxCallCapacity {
		if !c.TryReserve() {
			t.Fatal("refused below capacity")
		}
	}
	require.False(t, c.TryReserve())
	require.Equal(t, snap(governor.MaxCallCapacity, 0, governor.MaxCallCapacity), c.Snapshot())
	for range governor.MaxCallCapacity {
		c.Activate()
	}
	require.Equal(t, snap(governor.MaxCallCapacity, governor.MaxCallCapacity, 0), c.Snapshot())
	require.False(t, c.TryReserve())
	for range governor.MaxCallCapacity {
		c.ReleaseActive()
	}
	require.Equal(t, snap(governor.MaxCallCapacity, 0, 0), c.Snapshot())
}

func TestCallCapacityMisusePanics(t *testing.T) {
	outOfRange := func(op string, n int) string {
		return fmt.Sprintf("governor: %s: call capacity %d out of range [1, %d]", op, n, governor.MaxCallCapacity)
	}
	tests := []struct {
		name string
		msg  string
		f    func(c *governor.CallCapacity)
	}{
		{"activate without reservation", "governor: Activate without a reservation", func(c *governor.CallCapacity) { c.Activate() }},
		{"release reserved without reservation", "governor: ReleaseReserved without a reservation", func(c *governor.CallCapacity) { c.ReleaseReserved() }},
		{"release active without active", "governor: ReleaseActive without an active call", func(c *governor.CallCapacity) { c.ReleaseActive() }},
		{"set capacity zero", outOfRange("SetCapacity", 0), func(c *governor.CallCapacity) { c.SetCapacity(0) }},
		{"set capacity negative", outOfRange("SetCapacity", -1), func(c *governor.CallCapacity) { c.SetCapacity(-1) }},
		{"set capacity too large", outOfRange("SetCapacity", governor.MaxCallCapacity+1), func(c *governor.CallCapacity) { c.SetCapacity(governor.MaxCallCapacity + 1) }},
		{"new zero", outOfRange("NewCallCapacity", 0), func(*governor.CallCapacity) { governor.NewCallCapacity(0) }},
		{"new too large", outOfRange("NewCallCapacity", 1<<21), func(*governor.CallCapacity) { governor.NewCallCapacity(1 << 21) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := governor.NewCallCapacity(3)
			before := c.Snapshot()
			require.PanicsWithValue(t, tt.msg, func() { tt.f(c) })
			assert.Equal(t, before, c.Snapshot(), "a panicking call must leave the word unchanged")
		})
	}
}

// capModel is the reference model of CallCapacity.
type capModel struct{ capacity, active, reserved int }

func TestCallCapacityMatchesModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		initial := rapid.IntRange(1, 8).Draw(t, "capacity")
		c := governor.NewCallCapacity(initial)
		m := capModel{capacity: initial}
		for i, n := 0, rapid.IntRange(1, 200).Draw(t, "ops"); i < n; i++ {
			switch op := capOp(rapid.IntRange(0, 4).Draw(t, "op")); op {
			case opReserve:
				want := m.active+m.reserved < m.capacity
				if got := c.TryReserve(); got != want {
					t.Fatalf("op %d reserve = %v, model %v (%+v)", i, got, want, m)
				}
				if want {
					m.reserved++
				}
			case opActivate:
				if m.reserved == 0 {
					continue
				}
				c.Activate()
				m.reserved--
				m.active++
			case opReleaseReserved:
				if m.reserved == 0 {
					continue
				}
				c.ReleaseReserved()
				m.reserved--
			case opReleaseActive:
				if m.active == 0 {
					continue
				}
				c.ReleaseActive()
				m.active--
			case opSetCapacity:
				n := rapid.IntRange(1, 8).Draw(t, "n")
				c.SetCapacity(n)
				m.capacity = n
			}
			got := c.Snapshot()
			if got != snap(m.capacity, m.active, m.reserved) {
				t.Fatalf("op %d: snapshot %+v, model %+v", i, got, m)
			}
		}
	})
}

// TestCallCapacityGrantsWithinCapacity checks the grant invariant as a
// property: a grant happens only when the usage before it is below the
// capacity in force, so usage exceeds capacity only through shrinks, and
// only by what was already granted.
func TestCallCapacityGrantsWithinCapacity(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := governor.NewCallCapacity(rapid.IntRange(1, 8).Draw(t, "capacity"))
		for i, n := 0, rapid.IntRange(1, 200).Draw(t, "ops"); i < n; i++ {
			before := c.Snapshot()
			switch rapid.IntRange(0, 3).Draw(t, "op") {
			case 0:
				granted := c.TryReserve()
				if granted != (before.Active+before.Reserved < before.Capacity) {
					t.Fatalf("grant %v with usage %d and capacity %d", granted, before.Active+before.Reserved, before.Capacity)
				}
			case 1:
				if before.Reserved > 0 {
					c.Activate()
				}
			case 2:
				if before.Active > 0 {
					c.ReleaseActive()
				}
			case 3:
				c.SetCapacity(rapid.IntRange(1, 8).Draw(t, "n"))
			}
		}
	})
}

func TestCallCapacityAllocatesNothing(t *testing.T) {
	c := governor.NewCallCapacity(4)
	allocs := testing.AllocsPerRun(1000, func() {
		c.TryReserve()
		c.Activate()
		c.ReleaseActive()
		_ = c.Snapshot()
	})
	assert.Zero(t, allocs)
}
