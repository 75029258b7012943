package plugin_test

import (
	"bytes"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/conformance/capabilities"
	"github.com/sluicerpc/sluice/plugin"
	"github.com/sluicerpc/sluice/plugin/internal/testpolicy"
	"github.com/sluicerpc/sluice/spi"
)

// reported is one Report a scriptedPolicy received.
type reported struct {
	outcome spi.AttemptOutcome
	token   uint64
}

// scriptedPolicy answers TryAcquire with scripted decisions, in order, and
// records every call.
type scriptedPolicy struct {
	mu        sync.Mutex
	decisions []spi.EndpointDecision
	asked     [][2]string
	reports   []reported
	panicTry  bool
	panicRep  bool
}

func (p *scriptedPolicy) TryAcquire(endpoint, method string) spi.EndpointDecision {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.panicTry {
		panic("scripted TryAcquire panic")
	}
	p.asked = append(p.asked, [2]string{endpoint, method})
	d := p.decisions[0]
	p.decisions = p.decisions[1:]
	return d
}

func (p *scriptedPolicy) Report(o spi.AttemptOutcome, token uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.panicRep {
		panic("scripted Report panic")
	}
	p.reports = append(p.reports, reported{o, token})
}

func TestEndpointPolicyRoundTrip(t *testing.T) {
	decisions := []spi.EndpointDecision{
		{Allowed: true, Token: 0},
		{Allowed: true, Token: 1<<63 + 5},
		{Allowed: true, Token: ^uint64(0)},
		{RetryAfter: 1234567891 * time.Nanosecond},
		{},
		{RetryAfter: time.Nanosecond},
	}
	sp := &scriptedPolicy{decisions: append([]spi.EndpointDecision(nil), decisions...)}
	caps := capabilities.EndpointPolicy{Deterministic: true, Bounded: 7}
	p := plugin.ConnectInProcessConfig(t, plugin.ServeConfig{
		EndpointPolicies: []plugin.EndpointPolicyEntry{
			{Name: "scripted", New: func(spi.Clock) spi.EndpointPolicy { return sp }, Capabilities: &caps},
			{Name: "bare", New: testpolicy.New},
		},
		Logger: quietLogger(),
	}, plugin.WithLogger(quietLogger()))

	assert.Empty(t, p.LimiterKinds(), "a config of policies alone serves no limiter kind")
	assert.Equal(t, []string{"scripted", "bare"}, p.EndpointPolicies())
	got, ok := p.EndpointPolicyCapabilities("scripted")
	assert.True(t, ok)
	assert.Equal(t, caps, got)
	_, ok = p.EndpointPolicyCapabilities("bare")
	assert.False(t, ok, "bare declares no capabilities")
	_, ok = p.EndpointPolicyCapabilities("nope")
	assert.False(t, ok)
	_, err := p.NewEndpointPolicy("nope")
	assert.ErrorContains(t, err, `no endpoint policy "nope"`)
	assert.ErrorContains(t, err, "bare", "the error lists what the plugin serves")

	ep, err := p.NewEndpointPolicy("scripted")
	require.NoError(t, err)
	defer func() { _ = ep.Close() }()
	assert.Equal(t, "scripted", ep.Name())
	assert.Same(t, p, ep.Plugin())
	endpoints := []string{"10.0.0.1:7000", "", "[::1]:1", "héllo", "a", "b"}
	for i, want := range decisions {
		assert.Equal(t, want, ep.TryAcquire(endpoints[i], "/svc/M"+endpoints[i]), "decision %d", i)
	}
	for i, e := range endpoints {
		assert.Equal(t, [2]string{e, "/svc/M" + e}, sp.asked[i])
	}

	outcomes := []reported{
		{spi.AttemptOutcome{Kind: spi.OutcomeSuccess, ResponseObserved: true, Elapsed: 1500 * time.Microsecond}, 0},
		{spi.AttemptOutcome{Kind: spi.OutcomeRemoteError, Code: 14, ResponseObserved: true, Elapsed: time.Nanosecond}, 1<<63 + 5},
		{spi.AttemptOutcome{Kind: spi.OutcomeSendFailure, Code: 14}, ^uint64(0)},
		{spi.AttemptOutcome{Kind: spi.OutcomeConnectionClosed, Code: 255, Elapsed: time.Hour}, 42},
		{spi.AttemptOutcome{Kind: spi.OutcomeGoAway, Code: 14}, 7},
		{spi.AttemptOutcome{Kind: spi.OutcomeCancelled, Code: 1}, 8},
		{spi.AttemptOutcome{Kind: spi.OutcomeDeadlineExceeded, Code: 4, Elapsed: 3 * time.Second}, 9},
		{spi.AttemptOutcome{Kind: 200}, 10}, // an undefined kind crosses as it is
	}
	for _, r := range outcomes {
		ep.Report(r.outcome, r.token)
	}
	assert.Equal(t, outcomes, sp.reports)
	assert.NoError(t, ep.Err())
	assert.Zero(t, p.Failures())

	// Each NewEndpointPolicy is a fresh instance.
	a, err := p.NewEndpointPolicy("bare")
	require.NoError(t, err)
	b, err := p.NewEndpointPolicy("bare")
	require.NoError(t, err)
	for range testpolicy.Bound {
		require.True(t, a.TryAcquire("e", "m").Allowed)
	}
	assert.False(t, a.TryAcquire("e", "m").Allowed)
	assert.True(t, b.TryAcquire("e", "m").Allowed, "instances share no state")
	require.NoError(t, a.Close())
	require.NoError(t, b.Close())
}

// TestEndpointPolicyPanics: a panic of TryAcquire is re-raised in the
// host; a panic of Report is recovered and logged in the plugin, and the
// host's Report returns normally and counts no failure.
func TestEndpointPolicyPanics(t *testing.T) {
	sp := &scriptedPolicy{panicTry: true, panicRep: true}
	var logs syncBuffer
	p := plugin.ConnectInProcessConfig(t, plugin.ServeConfig{
		EndpointPolicies: []plugin.EndpointPolicyEntry{{Name: "panicky", New: func(spi.Clock) spi.EndpointPolicy { return sp }}},
		Logger:           hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Info}),
	}, plugin.WithLogger(quietLogger()))
	ep, err := p.NewEndpointPolicy("panicky")
	require.NoError(t, err)
	defer func() { _ = ep.Close() }()

	assert.PanicsWithValue(t, "scripted TryAcquire panic", func() { ep.TryAcquire("e", "m") })
	assert.NotPanics(t, func() { ep.Report(spi.AttemptOutcome{Kind: spi.OutcomeSuccess}, 3) })
	assert.Contains(t, logs.String(), "endpoint policy Report panicked")
	assert.Contains(t, logs.String(), "scripted Report panic")
	assert.Zero(t, p.Failures())
	assert.NoError(t, ep.Err())

	// The plugin keeps serving.
	sp.mu.Lock()
	sp.panicTry, sp.panicRep = false, false
	sp.decisions = []spi.EndpointDecision{{Allowed: true, Token: 9}}
	sp.mu.Unlock()
	assert.Equal(t, spi.EndpointDecision{Allowed: true, Token: 9}, ep.TryAcquire("e", "m"))
	ep.Report(spi.AttemptOutcome{Kind: spi.OutcomeSuccess}, 9)
	assert.Len(t, sp.reports, 1)
}

// TestEndpointPolicyCloseDrops: Close drops (and closes) the instance in
// the plugin, is idempotent, and later calls neither reach the plugin nor
// count as failures.
func TestEndpointPolicyCloseDrops(t *testing.T) {
	var mu sync.Mutex
	var made []*testpolicy.Policy
	p := plugin.ConnectInProcessConfig(t, plugin.ServeConfig{
		EndpointPolicies: []plugin.EndpointPolicyEntry{{Name: testpolicy.Name, New: func(spi.Clock) spi.EndpointPolicy {
			pol := testpolicy.New(nil).(*testpolicy.Policy)
			mu.Lock()
			made = append(made, pol)
			mu.Unlock()
			return pol
		}}},
		Logger: quietLogger(),
	}, plugin.WithLogger(quietLogger()))
	ep, err := p.NewEndpointPolicy(testpolicy.Name)
	require.NoError(t, err)
	d := ep.TryAcquire("e", "m")
	require.True(t, d.Allowed)
	require.Len(t, made, 1)
	assert.False(t, made[0].Closed())

	require.NoError(t, ep.Close())
	assert.True(t, made[0].Closed(), "Close drops and closes the instance in the plugin")
	require.NoError(t, ep.Close(), "Close is idempotent")

	assert.Equal(t, spi.EndpointDecision{}, ep.TryAcquire("e", "m"), "a closed policy refuses")
	assert.ErrorIs(t, ep.Err(), plugin.ErrEndpointPolicyClosed)
	ep.Report(spi.AttemptOutcome{Kind: spi.OutcomeSuccess}, d.Token)
	assert.Zero(t, p.Failures())
}

// TestEndpointPolicyCallTimeout: a TryAcquire left unanswered refuses
// after the call timeout, counted; the attempt the plugin allowed after
// the host gave up is reported there as cancelled, so it holds no slot.
// The call watch is ticked by hand, as in TestCallTimeoutFailsAHungCall.
func TestEndpointPolicyCallTimeout(t *testing.T) {
	const timeout = waitLimit
	stall := &sync.RWMutex{}
	entered := make(chan struct{}, 1)
	decided := make(chan spi.EndpointDecision, 1)
	inner := testpolicy.New(nil)
	p := plugin.ConnectInProcessConfig(t, plugin.ServeConfig{
		EndpointPolicies: []plugin.EndpointPolicyEntry{{Name: "stalling", New: func(spi.Clock) spi.EndpointPolicy {
			return stallingPolicy{inner, stall, entered, decided}
		}}},
		Logger: quietLogger(),
	}, plugin.WithLogger(quietLogger()), plugin.WithCallTimeout(timeout), plugin.WithManualCallWatch())
	ep, err := p.NewEndpointPolicy("stalling")
	require.NoError(t, err)
	defer func() { _ = ep.Close() }()

	stall.Lock()
	answered := make(chan spi.EndpointDecision, 1)
	go func() { answered <- ep.TryAcquire("e", "m") }()
	<-entered // the host began the call; the plugin stalls in it
	for i := range plugin.CallWatchTicks {
		require.Zero(t, plugin.TickCallWatch(p), "failed before the call timeout (tick %d)", i+1)
	}
	require.Equal(t, 1, plugin.TickCallWatch(p), "a full timeout past the call: overdue")
	var d spi.EndpointDecision
	select {
	case d = <-answered:
	case <-time.After(waitLimit):
		t.Fatal("the timed-out call did not return")
	}
	assert.Equal(t, spi.EndpointDecision{}, d)
	assert.ErrorIs(t, ep.Err(), plugin.ErrPluginUnavailable)
	assert.ErrorContains(t, ep.Err(), "no answer within the call timeout")
	assert.ErrorIs(t, p.Err(), plugin.ErrPluginUnavailable)
	assert.Equal(t, uint64(1), p.Failures())

	// A later call on the same connection (a Report of a token the policy
	// never issued, which does not stall): HTTP/2 keeps frames in order,
	// so once it is answered the plugin has seen that the host gave up on
	// the stalled call.
	ep.Report(spi.AttemptOutcome{Kind: spi.OutcomeSuccess}, 0)
	stall.Unlock()
	require.True(t, (<-decided).Allowed, "the stalled call was allowed in the plugin")
	// The slot comes back: Bound attempts fit again.
	assert.Eventually(t, func() bool {
		var held []uint64
		for range testpolicy.Bound + 1 {
			if d := inner.TryAcquire("e", "m"); d.Allowed {
				held = append(held, d.Token)
			}
		}
		for _, tok := range held {
			inner.Report(spi.AttemptOutcome{Kind: spi.OutcomeSuccess}, tok)
		}
		return len(held) == testpolicy.Bound
	}, waitLimit, time.Millisecond, "the attempt allowed after the host gave up holds a slot")
	assert.Equal(t, uint64(1), p.Failures(), "no other call timed out")
}

type stallingPolicy struct {
	spi.EndpointPolicy
	stall   *sync.RWMutex
	entered chan struct{}
	decided chan spi.EndpointDecision
}

func (p stallingPolicy) TryAcquire(endpoint, method string) spi.EndpointDecision {
	select {
	case p.entered <- struct{}{}:
	default:
	}
	p.stall.RLock()
	defer p.stall.RUnlock()
	d := p.EndpointPolicy.TryAcquire(endpoint, method)
	select {
	case p.decided <- d:
	default:
	}
	return d
}

// TestEndpointPolicySubprocess: the test plugin serves its policy, with
// its capabilities, next to its limiter kind; a plugin of policies alone
// opens too, and has no limiter kind to load.
func TestEndpointPolicySubprocess(t *testing.T) {
	p, err := plugin.Open(pluginPath, plugin.WithLogger(quietLogger()))
	require.NoError(t, err)
	defer func() { _ = p.Close() }()
	assert.Len(t, p.LimiterKinds(), 1)
	assert.Equal(t, []string{testpolicy.Name}, p.EndpointPolicies())
	caps, ok := p.EndpointPolicyCapabilities(testpolicy.Name)
	assert.True(t, ok)
	assert.Equal(t, testpolicy.Capabilities(), caps)
	ep, err := p.NewEndpointPolicy(testpolicy.Name)
	require.NoError(t, err)
	var tokens []uint64
	for range testpolicy.Bound {
		d := ep.TryAcquire("e", "m")
		require.True(t, d.Allowed)
		tokens = append(tokens, d.Token)
	}
	assert.False(t, ep.TryAcquire("e", "m").Allowed)
	ep.Report(spi.AttemptOutcome{Kind: spi.OutcomeSuccess}, tokens[0])
	assert.True(t, ep.TryAcquire("e", "m").Allowed)
	require.NoError(t, ep.Close())

	t.Setenv(modeEnv, "policies")
	q, err := plugin.Open(pluginPath, plugin.WithLogger(quietLogger()))
	require.NoError(t, err)
	defer func() { _ = q.Close() }()
	assert.Empty(t, q.LimiterKinds())
	assert.Equal(t, []string{testpolicy.Name}, q.EndpointPolicies())
	_, err = plugin.LoadLimiterKind(pluginPath, plugin.WithLogger(quietLogger()))
	assert.ErrorContains(t, err, "serves 0 limiter kinds")
}

func TestServeConfigValidateEndpointPolicies(t *testing.T) {
	good := testpolicy.Capabilities()
	bad := capabilities.EndpointPolicy{Bounded: -1}
	entry := func(name string, c *capabilities.EndpointPolicy) plugin.EndpointPolicyEntry {
		return plugin.EndpointPolicyEntry{Name: name, New: testpolicy.New, Capabilities: c}
	}
	tests := []struct {
		name    string
		entries []plugin.EndpointPolicyEntry
		want    string
	}{
		{"one", []plugin.EndpointPolicyEntry{entry("a", nil)}, ""},
		{"two with capabilities", []plugin.EndpointPolicyEntry{entry("a", &good), entry("b", nil)}, ""},
		{"empty name", []plugin.EndpointPolicyEntry{entry("", nil)}, "empty name"},
		{"twice", []plugin.EndpointPolicyEntry{entry("a", nil), entry("a", nil)}, "served twice"},
		{"nil New", []plugin.EndpointPolicyEntry{{Name: "a"}}, "New is nil"},
		{"invalid capabilities", []plugin.EndpointPolicyEntry{entry("a", &bad)}, "negative Bounded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := plugin.ServeConfig{EndpointPolicies: tt.entries}.Validate()
			if tt.want == "" {
				assert.NoError(t, err)
				return
			}
			assert.ErrorContains(t, err, tt.want)
		})
	}
	assert.ErrorContains(t, plugin.ServeConfig{}.Validate(), "no limiter kind and no endpoint policy")
}

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// clockPolicy refuses every attempt with RetryAfter = its clock's time
// since epoch: it shows which clock the policy in the plugin reads.
type clockPolicy struct{ clock spi.Clock }

var policyEpoch = time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC)

func (p clockPolicy) TryAcquire(string, string) spi.EndpointDecision {
	return spi.EndpointDecision{RetryAfter: p.clock.Now().Sub(policyEpoch)}
}
func (clockPolicy) Report(spi.AttemptOutcome, uint64) {}

type manualClock struct{ at atomic.Int64 }

func (c *manualClock) Now() time.Time { return time.Unix(0, c.at.Load()) }

// TestPolicyRunsOnTheHostsClock: the policy in the plugin reads the host's
// clock, to the nanosecond, and never goes back.
func TestPolicyRunsOnTheHostsClock(t *testing.T) {
	p := plugin.ConnectInProcessConfig(t, plugin.ServeConfig{
		EndpointPolicies: []plugin.EndpointPolicyEntry{{Name: "clock", New: func(c spi.Clock) spi.EndpointPolicy { return clockPolicy{c} }}},
		Logger:           quietLogger(),
	}, plugin.WithLogger(quietLogger()))
	var clock manualClock
	clock.at.Store(policyEpoch.Add(5 * time.Second).UnixNano())
	ep, err := p.NewEndpointPolicy("clock", plugin.WithPolicyClock(&clock))
	require.NoError(t, err)
	defer ep.Close()
	assert.Equal(t, 5*time.Second, ep.TryAcquire("e", "m").RetryAfter)
	clock.at.Add(int64(90*time.Minute + 7))
	assert.Equal(t, 5*time.Second+90*time.Minute+7, ep.TryAcquire("e", "m").RetryAfter)
	clock.at.Store(policyEpoch.UnixNano())
	assert.Equal(t, 5*time.Second+90*time.Minute+7, ep.TryAcquire("e", "m").RetryAfter, "the plugin's clock never goes back")
}
