package kernel_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/kernel"
	"github.com/sluicerpc/sluice/limiters/concurrency"
)

// A peer that makes new partition keys cannot hold up anybody else's
// admission: while a new key's creation is stopped in the middle of its
// reclaim step (holding the namespace's insert lock, the one lock new
// keys and reclaim take), requests for existing keys, the default
// partition, Stats, a key's stats and a page of entries all complete, and
// existing keys are still refused by their own limits. The new key
// completes once let go. (Issue 37 asks that a peer creating distinct keys
// at full speed raise no other request's admission latency beyond a small
// bound: existing keys take no lock that new keys take, so what a new key
// costs is paid by new keys only.) The minute is a guard against a hang,
// not a measure.
func TestNewKeysDoNotHoldUpExistingKeys(t *testing.T) {
	f := newPartFixture(t)
	const keys, idle = 1_000, time.Minute
	f.enable(partitioned(byTenant(1), 2*keys, idle, concurrency.Spec(1)))
	for i := range keys {
		f.grantT(tenant(fmt.Sprint("t", i))).Release()
	}
	held := f.grantT(tenant("held"))
	f.clock.Advance(idle) // a reclaim pass is due: the next new key makes a step
	for i := range 100 {
		f.grantT(tenant(fmt.Sprint("t", i))).Release() // used again: not reclaimed by the step
	}

	inStep, resume := make(chan struct{}), make(chan struct{})
	var once sync.Once
	kernel.SetSweepStepHook(func(int) {
		once.Do(func() {
			close(inStep)
			<-resume
		})
	})
	defer kernel.SetSweepStepHook(nil)
	created := make(chan error, 1)
	go func() {
		p, err := f.admitT(tenant("new"))
		if err == nil {
			p.Release()
		}
		created <- err
	}()
	<-inStep

	others := make(chan error, 1)
	go func() {
		others <- func() error {
			for i := range 100 {
				p, err := f.admitT(tenant(fmt.Sprint("t", i))) // existing keys the step keeps
				if err != nil {
					return fmt.Errorf("existing key t%d: %w", i, err)
				}
				p.Release()
			}
			if _, err := f.admitT(tenant("held")); err == nil {
				return fmt.Errorf("held's second request was granted over its limit of 1")
			}
			p, err := f.admitT(kernel.Request{}) // the default partition
			if err != nil {
				return fmt.Errorf("the default partition: %w", err)
			}
			p.Release()
			if st, ok := f.k.Stats().Partition("partition:tenant@v1"); !ok || st.Keys < 101 {
				return fmt.Errorf("Stats: %+v, %v", st, ok)
			}
			if _, ok := f.k.PartitionEntry("partition:tenant@v1", "t99"); !ok {
				return fmt.Errorf("PartitionEntry found no t99")
			}
			if page, _, _ := f.k.PartitionEntries("partition:tenant@v1", kernel.PartitionCursor{}, 10); len(page) < 10 {
				return fmt.Errorf("a page of %d entries", len(page))
			}
			return nil
		}()
	}()
	select {
	case err := <-others:
		require.NoError(t, err)
	case <-time.After(time.Minute):
		close(resume)
		t.Fatal("a request for an existing key, the default partition or Stats waited for a new key's reclaim step")
	}
	select {
	case err := <-created:
		t.Fatalf("the new key's creation returned (%v) while its step was stopped", err)
	default:
	}
	close(resume)
	require.NoError(t, <-created)
	held.Release()
}
