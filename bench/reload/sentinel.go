package main

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/alibaba/sentinel-golang/api"
	"github.com/alibaba/sentinel-golang/core/base"
	"github.com/alibaba/sentinel-golang/core/flow"
	"github.com/alibaba/sentinel-golang/util"
	"github.com/sluicerpc/sluice/bench/internal/quietsentinel"
)

// github.com/alibaba/sentinel-golang v1.0.4 reads time through its util
// package only (util.CurrentTimeMillis, util.Now), and util.SetClock
// replaces that clock process-wide. The cases install sentinelClock, which
// reads the simulated clock, so sentinel runs on simulated time like the
// other systems; nothing runs in real time.

// sentinelClock is the simulated clock as a sentinel-golang util.Clock.
type sentinelClock struct{ c *Clock }

var _ util.Clock = sentinelClock{}

func (s sentinelClock) Now() time.Time { return s.c.Now() }

// Sleep would move simulated time behind the driver's back. Only
// sentinel's throttling controller and its background tasks sleep; the
// cases use neither.
func (s sentinelClock) Sleep(d time.Duration) {
	panic(fmt.Sprintf("reload: sentinel-golang slept %v on the simulated clock", d))
}

func (s sentinelClock) CurrentTimeMillis() uint64 { return uint64(s.c.Now().UnixMilli()) }
func (s sentinelClock) CurrentTimeNano() uint64   { return uint64(s.c.Now().UnixNano()) }

var (
	sentinelOnce sync.Once
	sentinelErr  error
	sentinelSeq  atomic.Int64
)

// initSentinel initializes sentinel-golang once per process as
// bench/peers_test.go does, writing nowhere and starting no goroutine: the
// record log goes to quietsentinel.Logger, and the metric log, the system
// collectors, the cached-time ticker (which would read the real clock) and
// the metric HTTP exporter are off. The statistic settings are sentinel's
// defaults: per resource, a 1 s sliding window of 2 buckets of 500 ms for
// flow rules.
func initSentinel() error {
	sentinelOnce.Do(func() {
		sentinelErr = api.InitWithConfig(quietsentinel.Config("sluice-reload"))
	})
	return sentinelErr
}

// sentinelLoadRules is how sentinel users change a limit: flow.LoadRules
// with the complete new rule set. The resource has one flow rule with the
// default controller (Direct token calculation, Reject behaviour: refuse
// when the passes in the statistic window plus this one exceed Threshold)
// and the resource's default statistic (StatIntervalInMs 0). The rule is
// loaded at T0 with threshold from and replaced at P with threshold to.
func sentinelLoadRules(from, to float64) func(*Clock) (Subject, error) {
	return func(clock *Clock) (Subject, error) {
		util.SetClock(sentinelClock{clock})
		if err := initSentinel(); err != nil {
			util.SetClock(util.NewRealClock())
			return Subject{}, fmt.Errorf("sentinel: init: %w", err)
		}
		// Statistics are global per resource name: a fresh name per run.
		res := fmt.Sprintf("sluice-reload-%d", sentinelSeq.Add(1))
		load := func(threshold float64) error {
			if _, err := flow.LoadRules([]*flow.Rule{{
				Resource:               res,
				TokenCalculateStrategy: flow.Direct,
				ControlBehavior:        flow.Reject,
				Threshold:              threshold,
			}}); err != nil {
				return fmt.Errorf("sentinel: LoadRules: %w", err)
			}
			if rs := flow.GetRulesOfResource(res); len(rs) != 1 || rs[0].Threshold != threshold {
				return fmt.Errorf("sentinel: flow rules of %s = %v, want one with threshold %v", res, rs, threshold)
			}
			return nil
		}
		closeFn := func() error {
			err := flow.ClearRules()
			util.SetClock(util.NewRealClock())
			return err
		}
		if err := load(from); err != nil {
			return Subject{}, errors.Join(err, closeFn())
		}
		return Subject{
			Admit: func(time.Time) (bool, error) {
				e, blk := api.Entry(res)
				if blk == nil {
					e.Exit()
					return true, nil
				}
				if blk.BlockType() != base.BlockTypeFlow {
					return false, fmt.Errorf("sentinel: blocked by %v, not by the flow rule: %v", blk.BlockType(), blk)
				}
				return false, nil
			},
			Events: []Event{{At: Publish, Do: func(time.Time) error { return load(to) }}},
			Close:  closeFn,
		}, nil
	}
}
