package plugin_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/plugin"
	"github.com/sluicerpc/sluice/plugin/internal/testkind"
	"github.com/sluicerpc/sluice/spi"
)

// stalling is testkind's limiter whose TryAcquire signals entered, blocks
// while stall is held, and reports each decision it made on decided.
type stalling struct {
	testkind.Kind
	stall   *sync.RWMutex
	entered chan struct{}
	decided chan spi.Decision
}

func (k stalling) New(p spi.Params, now time.Time) (spi.Limiter, error) {
	l, err := k.Kind.New(p, now)
	return stallingLimiter{l, k}, err
}

type stallingLimiter struct {
	spi.Limiter
	k stalling
}

func (l stallingLimiter) TryAcquire(now time.Time, n int64) spi.Decision {
	select {
	case l.k.entered <- struct{}{}:
	default:
	}
	l.k.stall.RLock()
	defer l.k.stall.RUnlock()
	d := l.Limiter.TryAcquire(now, n)
	l.k.decided <- d
	return d
}

// TestCallTimeoutFailsAHungCall: a plugin that leaves TryAcquire
// unanswered makes it refuse after the call timeout with a clear error,
// and the plugin serves again once it answers.
//
// The call watch is driven by hand (WithManualCallWatch): the stalled call
// is overdue exactly when the test has ticked a full timeout past it, and
// no other call of the test can time out on a slow machine; the timeout
// itself is long, since it also bounds the handshake's listing calls as a
// deadline. (The watch's
// timing itself, a failure between one and one and a quarter timeouts, is
// TestCallWatchFailsAHungCallWithinAQuarter's, on synctest's clock.)
func TestCallTimeoutFailsAHungCall(t *testing.T) {
	const timeout = waitLimit
	kind := stalling{stall: &sync.RWMutex{}, entered: make(chan struct{}, 1), decided: make(chan spi.Decision, 1)}
	k := plugin.ConnectInProcess(t, kind, plugin.WithLogger(quietLogger()), plugin.WithCallTimeout(timeout), plugin.WithManualCallWatch())
	now := time.Unix(5, 0)
	l, err := k.New(testkind.Params(1), now)
	require.NoError(t, err)

	kind.stall.Lock()
	answered := make(chan spi.Decision, 1)
	go func() { answered <- l.TryAcquire(now, 1) }()
	<-kind.entered // the host began the call; the plugin stalls in it
	for i := range plugin.CallWatchTicks {
		require.Zero(t, plugin.TickCallWatch(k.Plugin()), "failed before the call timeout (tick %d)", i+1)
	}
	require.Equal(t, 1, plugin.TickCallWatch(k.Plugin()), "a full timeout past the call: overdue")
	var d spi.Decision
	select {
	case d = <-answered:
	case <-time.After(waitLimit):
		t.Fatal("the timed-out call did not return")
	}

	assert.Equal(t, spi.RefuseNever(), d)
	err = l.(*plugin.Limiter).Err()
	assert.True(t, errors.Is(err, plugin.ErrPluginUnavailable), "%v", err)
	assert.ErrorContains(t, err, fmt.Sprintf("no answer within the call timeout %v", timeout))
	assert.Equal(t, uint64(1), k.Failures())

	// A later call on the same connection: HTTP/2 keeps frames in order,
	// so by the time it is answered the plugin has seen that the host gave
	// up on the stalled call.
	assert.Equal(t, int64(0), l.Snapshot(now).InUse)

	// The stalled call resumes in the plugin and is granted there, after
	// the host gave up on it: the grant is rolled back, not leaked, and
	// the plugin serves again.
	kind.stall.Unlock()
	require.True(t, (<-kind.decided).Granted, "the stalled call was granted in the plugin")
	assert.Eventually(t, func() bool { return l.Snapshot(now).InUse == 0 }, waitLimit, time.Millisecond,
		"the grant of the call that timed out is held in the plugin")
	require.True(t, l.TryAcquire(now, 1).Granted)
	<-kind.decided
	assert.Equal(t, int64(1), l.Snapshot(now).InUse)
	assert.Equal(t, uint64(1), k.Failures())
}
