package plugin

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func done(ctx context.Context) bool {
	select {
	case <-ctx.Done():
		return true
	default:
		return false
	}
}

// TestCallWatchFailsAHungCallWithinAQuarter: with timeout 100ms the
// watchdog ticks every 25ms, and a call fails between 100ms and 125ms after
// it began, whatever its phase.
func TestCallWatchFailsAHungCallWithinAQuarter(t *testing.T) {
	for _, phase := range []time.Duration{0, 1 * time.Millisecond, 24 * time.Millisecond} {
		t.Run(phase.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				hung := 0
				w := newCallWatch(100*time.Millisecond, func(n int) { hung += n })
				defer w.stopWatch(errPluginClosed)
				time.Sleep(phase)
				c := w.begin()
				time.Sleep(100*time.Millisecond - 1)
				synctest.Wait()
				assert.False(t, done(c.ctx), "failed before the timeout")
				time.Sleep(25*time.Millisecond + 1)
				synctest.Wait()
				require.True(t, done(c.ctx), "not failed within 5/4 of the timeout")
				assert.True(t, c.timedOut())
				assert.Equal(t, 1, hung)
				c.end()

				// Later calls run in a new epoch.
				next := w.begin()
				assert.False(t, done(next.ctx))
				next.end()
			})
		})
	}
}

// TestCallWatchFailsEveryCallInFlight: a hung plugin fails every call in
// flight at that moment, not only the overdue one; calls that end in time
// are never failed.
func TestCallWatchFailsEveryCallInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newCallWatch(100*time.Millisecond, nil)
		defer w.stopWatch(errPluginClosed)
		for range 50 { // quick calls never trip it
			c := w.begin()
			time.Sleep(10 * time.Millisecond)
			assert.False(t, done(c.ctx))
			c.end()
		}
		slow := w.begin()
		time.Sleep(90 * time.Millisecond)
		young := w.begin()
		time.Sleep(40 * time.Millisecond)
		synctest.Wait()
		assert.True(t, slow.timedOut())
		assert.True(t, young.timedOut(), "a call in flight with a hung one fails too")
		slow.end()
		young.end()
		for range 20 {
			c := w.begin()
			time.Sleep(20 * time.Millisecond)
			assert.False(t, done(c.ctx), "a call after the hang failed")
			c.end()
		}
	})
}

// TestCallWatchFallsBackToADeadline: with every slot taken, a call gets a
// deadline of its own, with the same timeout and cause.
func TestCallWatchFallsBackToADeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newCallWatch(time.Hour, nil)
		defer w.stopWatch(errPluginClosed)
		held := make([]call, watchSlots)
		for i := range held {
			held[i] = w.begin()
			require.GreaterOrEqual(t, held[i].slot, 0, "call %d did not get a slot", i)
		}
		extra := w.begin()
		assert.Equal(t, -1, extra.slot)
		deadline, ok := extra.ctx.Deadline()
		assert.True(t, ok)
		assert.Equal(t, time.Now().Add(time.Hour), deadline)
		extra.end()
		for _, c := range held {
			c.end()
		}
		again := w.begin()
		assert.GreaterOrEqual(t, again.slot, 0, "slots are freed by end")
		again.end()
	})
}

// TestCallWatchStop: stopping fails the calls in flight with the cause and
// every later call at once.
func TestCallWatchStop(t *testing.T) {
	w := newCallWatch(time.Minute, nil)
	c := w.begin()
	w.stopWatch(errPluginClosed)
	w.stopWatch(errPluginClosed) // idempotent
	assert.True(t, errors.Is(context.Cause(c.ctx), errPluginClosed))
	c.end()
	later := w.begin()
	assert.True(t, errors.Is(context.Cause(later.ctx), errPluginClosed))
	assert.False(t, later.timedOut())
	later.end()
}

// TestCallWatchAllocatesNothing: begin and end with a free slot are
// allocation-free.
func TestCallWatchAllocatesNothing(t *testing.T) {
	w := newCallWatch(time.Minute, nil)
	defer w.stopWatch(errPluginClosed)
	allocs := testing.AllocsPerRun(1000, func() {
		c := w.begin()
		c.end()
	})
	assert.Zero(t, allocs)
}
