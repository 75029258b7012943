package kernel_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/kernel"
	"github.com/sluicerpc/sluice/limiters/concurrency"
)

// No request pays for more than a bounded step of idle reclaim (issue 37:
// the request whose new key swept paid 43 ms at 10k keys and 4 s at 100k).
// With 10,000 idle keys in a full namespace, each new key's reclaim step
// visits at most about 256 entries, the first new key is admitted (its
// step reclaims some), and once the pass has gone round (10,000/256 new
// keys), every idle key is gone. With every key held, 1,000 refused keys
// each visit at most the same.
func TestReclaimWorkPerNewKeyIsBounded(t *testing.T) {
	f := newPartFixture(t)
	const keys, idle = 10_000, time.Minute
	f.enable(partitioned(byTenant(1), keys, idle, concurrency.Spec(1)))
	for i := range keys {
		f.grantT(tenant(fmt.Sprint("old-", i))).Release()
	}
	var steps, most int
	kernel.SetSweepStepHook(func(visited int) { steps, most = steps+1, max(most, visited) })
	defer kernel.SetSweepStepHook(nil)

	f.clock.Advance(idle)
	fresh := 0
	for f.partition("partition:tenant@v1").Keys > int64(fresh) {
		f.grantT(tenant(fmt.Sprint("new-", fresh))).Release()
		fresh++
		require.Less(t, fresh, keys, "the pass never finished")
	}
	require.LessOrEqual(t, most, 256+16, "entries one reclaim step visited")
	require.InDelta(t, keys/256, fresh, 3, "new keys until every idle key was reclaimed")
	t.Logf("%d idle keys reclaimed by %d new keys in %d steps, at most %d entries a step", keys, fresh, steps, most)

	// Every key held: nothing to reclaim, every new key refused, no
	// refusal pays for more than a step.
	f.update(partitioned(byTenant(2), keys, idle, concurrency.Spec(1)))
	for i := range keys {
		f.grantT(tenant(fmt.Sprint("held-", i))) // never released: the fixture's Close does not need them
	}
	steps, most = 0, 0
	f.clock.Advance(idle)
	for i := range 1000 {
		f.refusedT(tenant(fmt.Sprint("refused-", i)), kernel.ReasonPartitionCapacity)
	}
	require.LessOrEqual(t, most, 256+16, "entries one reclaim step visited")
	require.LessOrEqual(t, steps, keys/256+2, "one pass, then none until a 16th of IdleTimeout")
	t.Logf("1,000 refused keys made %d steps, at most %d entries a step", steps, most)
}
