package plugin_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/plugin"
	"github.com/sluicerpc/sluice/plugin/internal/testkind"
	"github.com/sluicerpc/sluice/spi"
)

func quietLogger() hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Name: "test", Level: hclog.Off})
}

// scripted is a kind whose limiters record the instants they are given and
// answer TryAcquire with a scripted decision.
type scripted struct {
	mu       sync.Mutex
	seen     []time.Time
	decision spi.Decision
}

func (s *scripted) record(t time.Time) {
	s.mu.Lock()
	s.seen = append(s.seen, t)
	s.mu.Unlock()
}

func (s *scripted) last() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seen[len(s.seen)-1]
}

func (*scripted) Name() string     { return "scripted" }
func (*scripted) Class() spi.Class { return spi.ClassRate }
func (*scripted) Validate(p spi.Params) error {
	if _, ok := p["bad"]; ok {
		return spi.InvalidParam("bad", "is not accepted, got %d", p["bad"])
	}
	if _, ok := p["other"]; ok {
		return errors.New("some other failure")
	}
	return nil
}

func (s *scripted) New(p spi.Params, now time.Time) (spi.Limiter, error) {
	if err := s.Validate(p); err != nil {
		return nil, err
	}
	s.record(now)
	return (*scriptedLimiter)(s), nil
}

type scriptedLimiter scripted

func (l *scriptedLimiter) TryAcquire(now time.Time, n int64) spi.Decision {
	(*scripted)(l).record(now)
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.decision
}
func (l *scriptedLimiter) Release(now time.Time, n int64) { (*scripted)(l).record(now) }
func (l *scriptedLimiter) Cancel(now time.Time, n int64)  { (*scripted)(l).record(now) }
func (l *scriptedLimiter) Reconfigure(now time.Time, p spi.Params) error {
	(*scripted)(l).record(now)
	return (*scripted)(l).Validate(p)
}
func (l *scriptedLimiter) Snapshot(now time.Time) spi.Snapshot {
	(*scripted)(l).record(now)
	return spi.Snapshot{Kind: "scripted", Limit: 7, InUse: 3, Available: 4}
}

func TestTimeAndDecisionsCrossExactly(t *testing.T) {
	s := &scripted{}
	k := plugin.ConnectInProcess(t, s)
	assert.Equal(t, "scripted", k.Name())
	assert.Equal(t, spi.ClassRate, k.Class())

	base := time.Date(2031, 5, 6, 7, 8, 9, 123456789, time.UTC)
	l, err := k.New(spi.Params{}, base)
	require.NoError(t, err)
	require.True(t, s.last().Equal(base))
	require.Equal(t, base.UnixNano(), s.last().UnixNano())

	retry := base.Add(1234567891 * time.Nanosecond)
	for _, d := range []spi.Decision{
		spi.Grant(),
		spi.RefuseUntilRelease(),
		spi.RefuseNever(),
		spi.RefuseUntil(retry),
		{Hint: spi.HintAt}, // zero RetryAt stays zero
	} {
		s.mu.Lock()
		s.decision = d
		s.mu.Unlock()
		now := base.Add(time.Duration(len(s.seen)) * 997 * time.Nanosecond)
		got := l.TryAcquire(now, 2)
		assert.True(t, s.last().Equal(now), "now crosses exactly")
		assert.Equal(t, d.Granted, got.Granted)
		assert.Equal(t, d.Hint, got.Hint)
		assert.True(t, d.RetryAt.Equal(got.RetryAt), "RetryAt %v, want %v", got.RetryAt, d.RetryAt)
		assert.Equal(t, d.RetryAt.IsZero(), got.RetryAt.IsZero())
	}

	now := base.Add(time.Second + 1)
	l.Release(now, 1)
	assert.True(t, s.last().Equal(now))
	now = now.Add(1)
	l.Cancel(now, 1)
	assert.True(t, s.last().Equal(now))
	now = now.Add(1)
	require.NoError(t, l.Reconfigure(now, spi.Params{"x": 1}))
	assert.True(t, s.last().Equal(now))
	now = now.Add(1)
	assert.Equal(t, spi.Snapshot{Kind: "scripted", Limit: 7, InUse: 3, Available: 4}, l.Snapshot(now))
	assert.True(t, s.last().Equal(now))

	l.TryAcquire(time.Time{}, 1)
	assert.True(t, s.last().IsZero(), "the zero time crosses as the zero time")
	assert.NoError(t, l.(*plugin.Limiter).Err())
	assert.Zero(t, k.Failures())
}

func TestErrorsCross(t *testing.T) {
	k := plugin.ConnectInProcess(t, &scripted{})

	err := k.Validate(spi.Params{"bad": 3})
	var pe *spi.ParamError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "bad", pe.Param)
	assert.Equal(t, "is not accepted, got 3", pe.Reason)

	_, err = k.New(spi.Params{"other": 1}, time.Unix(1, 0))
	var re *plugin.RemoteError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, "some other failure", re.Message)

	l, err := k.New(spi.Params{}, time.Unix(1, 0))
	require.NoError(t, err)
	require.ErrorAs(t, l.Reconfigure(time.Unix(2, 0), spi.Params{"bad": 1}), &pe)
	assert.NotErrorIs(t, err, plugin.ErrPluginUnavailable)
	assert.Zero(t, k.Failures(), "application errors are not failures to reach the plugin")
}

func TestPanicInPluginIsReraisedInHost(t *testing.T) {
	k := plugin.ConnectInProcess(t, testkind.Kind{})
	now := time.Unix(100, 0)
	l, err := k.New(testkind.Params(2), now)
	require.NoError(t, err)
	require.True(t, l.TryAcquire(now, 1).Granted)
	assert.PanicsWithValue(t, "testkind: released 2 units but only 1 are held", func() { l.Release(now, 2) })
	// The plugin keeps serving and the accounting is intact.
	assert.Equal(t, spi.Snapshot{Kind: testkind.Name, Limit: 2, InUse: 1, Available: 1}, l.Snapshot(now))
}

func TestRegister(t *testing.T) {
	k := plugin.ConnectInProcess(t, testkind.Kind{})
	reg := &spi.Registry{}
	require.NoError(t, k.Register(reg))
	got, err := reg.Lookup(testkind.Name)
	require.NoError(t, err)
	assert.Same(t, k, got)
	_, err = reg.Validate(spi.Spec{Kind: testkind.Name, Params: testkind.Params(0)})
	var pe *spi.ParamError
	assert.ErrorAs(t, err, &pe)
}
