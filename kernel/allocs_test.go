package kernel_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/kernel"
)

// The disabled path and the enabled immediate paths allocate nothing; only
// a request that really waits may allocate its waiter.
func TestImmediatePathsAllocateNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("allocation counts are measured in full runs")
	}
	ctx := context.Background()
	f := newFixture(t)
	var p kernel.Permit
	req := kernel.Request{Method: f.say}
	cycle := func() {
		if f.k.Capture(&p) {
			_ = p.Admit(ctx, req)
			p.Release()
		}
	}
	require.Zero(t, testing.AllocsPerRun(1000, cycle), "disabled")

	f.enable(ampleOptions(1 << 20))
	require.Zero(t, testing.AllocsPerRun(1000, cycle), "immediate permit")

	applyUpdates(f, 64)
	require.Zero(t, testing.AllocsPerRun(1000, cycle), "immediate permit after 64 updates")

	f.update(ampleOptions(1))
	holder := f.grant(f.say)
	require.Zero(t, testing.AllocsPerRun(1000, cycle), "immediate reject")
	holder.Release()
	f.requireIdle()
}
