package kernel_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/kernel"
	"github.com/sluicerpc/sluice/limiters/concurrency"
)

// Every refusal is counted once, on the scope that refused it, by reason;
// a partition's refusals (capacity and its entries' limits) on its
// namespace, whatever becomes of the entries.
func TestRefusalsAreCountedByScopeAndReason(t *testing.T) {
	f := newFixture(t)
	o := globalOnly(1)
	o.Methods = map[string]kernel.Rule{"math/Add": conc(1)}
	o = withQueue(o, 1, 1024, time.Hour)
	f.enable(o)
	p := f.grant(f.say)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	q := f.queue(ctx, kernel.Request{Method: f.say})
	f.refused(f.say, kernel.ReasonQueueFull)
	f.refused(f.shout, kernel.ReasonQueueFull)
	global, _ := f.k.Stats().Scope("global/concurrency")
	assert.Equal(t, map[string]uint64{"queue_full": 2}, global.Refusals)
	add, _ := f.k.Stats().Scope("method:math/Add/concurrency")
	assert.Nil(t, add.Refusals)
	p.Release()
	require.NoError(t, <-q.done)
	q.p.Release()
}

func TestPartitionRefusalsAreCountedOnTheNamespace(t *testing.T) {
	f := newPartFixture(t)
	f.enable(partitioned(byTenant(1), 1, time.Hour, concurrency.Spec(1)))
	a := f.grantT(tenant("a"))
	_, err := f.admitT(tenant("b"))
	require.ErrorIs(t, err, kernel.ErrRejected)
	_, err = f.admitT(tenant("a"))
	require.ErrorIs(t, err, kernel.ErrRejected)
	ps := f.k.Stats().Partitions
	require.Len(t, ps, 1)
	assert.Equal(t, map[string]uint64{"partition_capacity": 1, "concurrency": 1}, ps[0].Refusals)
	for _, sc := range f.k.Stats().Scopes {
		assert.Nil(t, sc.Refusals, "%s: an entry's refusal is the namespace's", sc.Name)
	}
	a.Release()
}
