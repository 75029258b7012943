package kernel_test

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/kernel"
)

func TestCellEmptyAcquireIsNil(t *testing.T) {
	var c kernel.Cell[string]
	_, ok := c.Acquire(0)
	require.False(t, ok)
	require.Nil(t, c.Load())
	c.Clear() // nothing to retire
}

func TestCellRetireWithoutLeasesDrainsAtOnce(t *testing.T) {
	var c kernel.Cell[string]
	var drained []string
	c.Publish("a", 1, func(v string) { drained = append(drained, v) })
	c.Publish("b", 2, func(v string) { drained = append(drained, v) })
	require.Equal(t, []string{"a"}, drained)
	c.Clear()
	require.Equal(t, []string{"a", "b"}, drained)
}

func TestCellDrainWaitsForLastLease(t *testing.T) {
	var c kernel.Cell[string]
	drains := 0
	c.Publish("a", 1, func(string) { drains++ })
	l1, ok1 := c.Acquire(1)
	l2, ok2 := c.Acquire(2) // another counter
	require.True(t, ok1 && ok2)
	g := l1.Generation()
	require.Same(t, g, l2.Generation())
	require.Equal(t, "a", l1.Value())
	require.Equal(t, uint64(1), g.Number())
	require.EqualValues(t, 2, g.Leases())

	g2 := c.Publish("b", 2, nil)
	require.True(t, g.Retired())
	require.False(t, g.Drained())
	require.Zero(t, drains, "leases still held")
	// A reader after the publication never leases the retired value.
	l3, ok := c.Acquire(3)
	require.True(t, ok)
	require.Same(t, g2, l3.Generation())
	l3.Release()

	l1.Release()
	require.Zero(t, drains)
	l2.Release()
	require.Equal(t, 1, drains, "drained exactly when the last lease ended")
	require.True(t, g.Drained())
}

func TestCellReleaseTooManyPanics(t *testing.T) {
	var c kernel.Cell[int]
	c.Publish(1, 1, nil)
	l, _ := c.Acquire(7)
	l.Release()
	require.Panics(t, l.Release)
}

// Many readers lease and release while a writer publishes: every retired
// generation drains exactly once, and only after its last lease ended.
func TestCellConcurrentDrainExactlyOnce(t *testing.T) {
	type val struct {
		leases  atomic.Int64
		drained atomic.Int32
	}
	var c kernel.Cell[*val]
	var all []*val
	onDrain := func(v *val) {
		require.Zero(t, v.leases.Load(), "drained while leased")
		v.drained.Add(1)
	}
	first := &val{}
	all = append(all, first)
	c.Publish(first, 0, onDrain)

	var wg sync.WaitGroup
	stop := make(chan struct{})
	for i := range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				l, ok := c.Acquire(uintptr(i))
				if !ok {
					continue
				}
				v := l.Value()
				v.leases.Add(1)
				require.Zero(t, v.drained.Load(), "leased after drain")
				v.leases.Add(-1)
				l.Release()
			}
		})
	}
	for i := 1; i <= 2000; i++ {
		v := &val{}
		all = append(all, v)
		c.Publish(v, uint64(i), onDrain)
	}
	close(stop)
	wg.Wait()
	c.Clear()
	for i, v := range all {
		require.EqualValues(t, 1, v.drained.Load(), "generation %d", i)
	}
}
