package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/kernel"
	"github.com/sluicerpc/sluice/limiters/concurrency"
	"github.com/sluicerpc/sluice/limiters/tokenbucket"
	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/server"
	"github.com/sluicerpc/sluice/spi"
)

func holdRule(limit int64) kernel.Options {
	return kernel.Options{Methods: map[string]kernel.Rule{"echo/Hold": {Limits: []spi.Spec{concurrency.Spec(limit)}}}}
}

// TestAdmissionRefusalKeepsTheConnection: over the limit, a call is answered
// ResourceExhausted with the reason, and the connection keeps working.
func TestAdmissionRefusalKeepsTheConnection(t *testing.T) {
	s := startServer(t, server.Options{})
	_, err := s.Admission().Enable(holdRule(1))
	require.NoError(t, err)
	c := dialRaw(t, s.addr)
	first := c.send("echo", "Hold", nil, nil)
	<-s.mux.entered

	r := c.call("echo", "Hold", nil)
	require.NotNil(t, r.err)
	assert.Equal(t, protocol.CodeResourceExhausted, r.err.Code)
	assert.Equal(t, "concurrency", r.err.Reason)
	assert.Contains(t, r.err.Message, "echo/Hold")

	// Other methods are not limited, and the connection works.
	assert.Equal(t, "ok", string(c.call("echo", "Say", []byte("ok")).body))
	close(s.mux.block)
	<-s.mux.ctxErr
	assert.Equal(t, first, c.next().id)
	assert.Equal(t, uint64(1), s.Stats().Refusals["concurrency"])
	requireLedgerZero(t, s)
}

// TestRateRefusalCarriesARetryHint: a token bucket refusal says when to
// retry.
func TestRateRefusalCarriesARetryHint(t *testing.T) {
	s := startServer(t, server.Options{})
	_, err := s.Admission().Enable(kernel.Options{Methods: map[string]kernel.Rule{
		"echo/Say": {Limits: []spi.Spec{tokenbucket.Spec(1, 1, time.Hour)}},
	}})
	require.NoError(t, err)
	c := dialRaw(t, s.addr)
	require.Nil(t, c.call("echo", "Say", nil).err)
	r := c.call("echo", "Say", nil)
	require.NotNil(t, r.err)
	assert.Equal(t, protocol.CodeResourceExhausted, r.err.Code)
	assert.Equal(t, "rate", r.err.Reason)
	assert.Greater(t, r.err.RetryAfter, 59*time.Minute)
	assert.LessOrEqual(t, r.err.RetryAfter, time.Hour)
}

// TestQueuedRequestWaitsWithoutBlockingTheReader: a queued call waits on
// its own goroutine; the connection keeps serving, and the queued call runs
// once capacity frees, with its payload intact.
func TestQueuedRequestWaitsWithoutBlockingTheReader(t *testing.T) {
	s := startServer(t, server.Options{})
	o := holdRule(1)
	o.Queue = kernel.QueuePolicy{MaxQueuedCalls: 4, MaxQueuedBytes: 1 << 20, MaxQueueDelay: time.Minute}
	_, err := s.Admission().Enable(o)
	require.NoError(t, err)
	c := dialRaw(t, s.addr)
	first := c.send("echo", "Hold", []byte("one"), nil)
	<-s.mux.entered
	second := c.send("echo", "Hold", []byte("two"), nil)
	require.Eventually(t, func() bool { return s.Stats().Admission.QueuedCalls == 1 }, 10*time.Second, time.Millisecond)
	assert.Equal(t, int64(len("two")+2), s.Stats().Admission.QueuedBytes, "the queued payload is charged")

	// The reader is free: another method answers at once.
	assert.Equal(t, "free", string(c.call("echo", "Say", []byte("free")).body))

	close(s.mux.block) // both Hold calls return at once
	got := map[uint64]string{}
	for range 2 {
		r := c.next()
		require.Nil(t, r.err)
		got[r.id] = string(r.body)
	}
	assert.Equal(t, map[uint64]string{first: "one", second: "two"}, got)
	requireLedgerZero(t, s)
}

// TestCallCapacityRefusal: over the call capacity a call is refused with
// reason call_capacity, before its body is decoded; capacity changes live.
func TestCallCapacityRefusal(t *testing.T) {
	s := startServer(t, server.Options{Calls: server.CallCapacity{PerConnection: 1}})
	c := dialRaw(t, s.addr)
	first := c.send("echo", "Hold", nil, nil)
	<-s.mux.entered
	r := c.call("typed", "Echo", []byte(`not json at all`))
	require.NotNil(t, r.err)
	assert.Equal(t, protocol.CodeResourceExhausted, r.err.Code, "refused before decoding: not InvalidArgument")
	assert.Equal(t, "call_capacity", r.err.Reason)
	assert.Contains(t, r.err.Message, "connection")

	// Raising the capacity live admits the next call; the held one runs on.
	require.NoError(t, s.SetCallCapacity(server.CallCapacity{PerConnection: 2}))
	assert.Equal(t, "x", string(c.call("echo", "Say", []byte("x")).body))

	// A server-wide bound below the usage refuses without cancelling.
	require.NoError(t, s.SetCallCapacity(server.CallCapacity{PerServer: 1}))
	r = c.call("echo", "Say", nil)
	require.NotNil(t, r.err)
	assert.Equal(t, "call_capacity", r.err.Reason)
	assert.Contains(t, r.err.Message, "server")
	close(s.mux.block)
	assert.NoError(t, <-s.mux.ctxErr, "the held call was not cancelled")
	assert.Equal(t, first, c.next().id)
	assert.Equal(t, "y", string(c.call("echo", "Say", []byte("y")).body))
	requireLedgerZero(t, s)
}

// TestOneWayRefusalsAreCounted: a one-way call refused by admission is
// dropped and counted; no frame answers it.
func TestOneWayRefusalsAreCounted(t *testing.T) {
	s := startServer(t, server.Options{})
	_, err := s.Admission().Enable(kernel.Options{Methods: map[string]kernel.Rule{
		"echo/OneWay": {Limits: []spi.Spec{tokenbucket.Spec(1, 1, time.Hour)}},
	}})
	require.NoError(t, err)
	c := dialRaw(t, s.addr)
	oneWay := func(r *protocol.Request) { r.OneWay, r.Cancellable = true, false }
	c.send("echo", "OneWay", []byte("a"), oneWay)
	<-s.mux.oneWay
	c.send("echo", "OneWay", []byte("b"), oneWay)
	assert.Equal(t, "after", string(c.call("echo", "Say", []byte("after")).body), "no answer to the dropped call")
	require.Eventually(t, func() bool { return s.Stats().OneWayDropped == 1 }, 10*time.Second, time.Millisecond)
	assert.Equal(t, uint64(1), s.Stats().Refusals["rate"])
}

// TestCaptureOncePerRequest is seed 000 section H: a request captured
// under program N while N+1 is published finishes entirely under N; the
// next request uses N+1.
func TestCaptureOncePerRequest(t *testing.T) {
	s := startServer(t, server.Options{})
	genN, err := s.Admission().Enable(holdRule(1))
	require.NoError(t, err)
	captured := make(chan uint64, 8)
	proceed := make(chan struct{})
	server.SetTestHooks(s.Server, &server.TestHooks{AfterCapture: func(gen uint64) {
		captured <- gen
		if gen == genN {
			<-proceed
		}
	}})
	c := dialRaw(t, s.addr)
	first := c.send("echo", "Hold", nil, nil)
	require.Equal(t, genN, <-captured, "captured under N")

	// N+1 tightens nothing for Hold but limits Say to zero-capacity
	// behaviour: a rate of 1 per hour, already spent below.
	genN1, err := s.Admission().Update(genN, kernel.Options{Methods: map[string]kernel.Rule{
		"echo/Hold": {Limits: []spi.Spec{concurrency.Spec(5)}},
		"echo/Say":  {Limits: []spi.Spec{tokenbucket.Spec(1, 1, time.Hour)}},
	}})
	require.NoError(t, err)
	close(proceed)
	<-s.mux.entered
	st := s.Stats().Admission
	assert.Equal(t, int64(2), st.LivePrograms, "N stays live while its request holds a permit")

	// The next request uses N+1.
	require.Nil(t, c.call("echo", "Say", nil).err)
	assert.Equal(t, genN1, <-captured)
	r := c.call("echo", "Say", nil)
	<-captured
	require.NotNil(t, r.err, "N+1's rate applies to the next requests")
	assert.Equal(t, "rate", r.err.Reason)

	close(s.mux.block)
	<-s.mux.ctxErr
	assert.Equal(t, first, c.next().id)
	require.Eventually(t, func() bool { return s.Stats().Admission.LivePrograms == 1 }, 10*time.Second, time.Millisecond,
		"N is reclaimed once its last request released")
	requireLedgerZero(t, s)
}

var _ = context.Background

// TestIdentityAndMetadataReachPartitionSelectors: the authenticator's
// identity and the request's metadata are facts of the partition selector:
// each tenant gets its own concurrency budget.
func TestIdentityAndMetadataReachPartitionSelectors(t *testing.T) {
	auth := server.AuthenticatorFunc(func(_ context.Context, info server.AuthInfo) (string, error) {
		return string(info.Payload), nil
	})
	s := startServer(t, server.Options{Authenticator: auth})
	byIdentity := kernel.Selector{Name: "identity", Version: 1, Key: func(f kernel.Facts) (string, bool) {
		return f.Identity, f.Identity != ""
	}}
	_, err := s.Admission().Enable(kernel.Options{Partition: &kernel.PartitionPolicy{
		Selector: byIdentity, MaxPartitions: 8, IdleTimeout: time.Minute,
		Rule: kernel.Rule{Limits: []spi.Spec{concurrency.Spec(1)}},
	}})
	require.NoError(t, err)
	dial := func(identity string) *rawClient {
		c := dialNoHandshake(t, s.addr)
		c.handshake([]byte(identity))
		return c
	}
	a, b := dial("tenant-a"), dial("tenant-b")
	a.send("echo", "Hold", nil, nil)
	<-s.mux.entered
	b.send("echo", "Hold", nil, nil)
	<-s.mux.entered // tenant-b has its own budget

	r := a.call("echo", "Say", nil)
	require.NotNil(t, r.err, "tenant-a's budget of 1 is held")
	assert.Equal(t, "concurrency", r.err.Reason)
	assert.Contains(t, r.err.Message, "partition:identity@v1")
	for range 2 {
		s.mux.block <- struct{}{}
		<-s.mux.ctxErr
	}
	a.next()
	b.next()

	// Metadata: a selector on a metadata value.
	byHeader := kernel.Selector{Name: "header", Version: 1, Key: func(f kernel.Facts) (string, bool) {
		if f.Metadata == nil {
			return "", false
		}
		return f.Metadata.Get("tenant")
	}}
	_, err = s.Admission().Update(s.Admission().Generation(), kernel.Options{Partition: &kernel.PartitionPolicy{
		Selector: byHeader, MaxPartitions: 8, IdleTimeout: time.Minute,
		Rule: kernel.Rule{Limits: []spi.Spec{concurrency.Spec(1)}},
	}})
	require.NoError(t, err)
	withTenant := func(name string) func(*protocol.Request) {
		return func(r *protocol.Request) { require.NoError(t, r.Metadata.Add("tenant", []byte(name))) }
	}
	a.send("echo", "Hold", nil, withTenant("x"))
	<-s.mux.entered
	id := a.send("echo", "Say", nil, withTenant("x"))
	r = a.next()
	assert.Equal(t, id, r.id)
	require.NotNil(t, r.err)
	assert.Equal(t, "concurrency", r.err.Reason)
	require.Nil(t, a.call("echo", "Say", []byte("y")).err, "no tenant: the default partition")
	s.mux.block <- struct{}{}
	<-s.mux.ctxErr
	a.next()
	requireLedgerZero(t, s)
}

// TestCapacityRefusalGivesBackRateQuota: a call granted by policy (a token
// taken) and then refused for call capacity consumed nothing: once
// capacity frees, the bucket still has every token.
func TestCapacityRefusalGivesBackRateQuota(t *testing.T) {
	s := startServer(t, server.Options{Calls: server.CallCapacity{PerConnection: 1}})
	_, err := s.Admission().Enable(kernel.Options{Methods: map[string]kernel.Rule{
		"echo/Say": {Limits: []spi.Spec{tokenbucket.Spec(3, 3, time.Hour)}},
	}})
	require.NoError(t, err)
	c := dialRaw(t, s.addr)
	first := c.send("echo", "Hold", nil, nil)
	<-s.mux.entered
	for range 10 {
		r := c.call("echo", "Say", nil)
		require.NotNil(t, r.err)
		require.Equal(t, "call_capacity", r.err.Reason)
	}
	sc, ok := s.Stats().Admission.Scope("method:echo/Say/rate")
	require.True(t, ok)
	require.Zero(t, sc.InUse, "refused calls took no token")

	close(s.mux.block)
	<-s.mux.ctxErr
	require.Equal(t, first, c.next().id)
	for range 3 {
		require.Nil(t, c.call("echo", "Say", nil).err)
	}
	r := c.call("echo", "Say", nil)
	require.NotNil(t, r.err)
	require.Equal(t, "rate", r.err.Reason)
	requireLedgerZero(t, s)
}

// TestRateRefusalBeyondTheQueueDelayIsImmediate: with a queue, a call the
// token bucket cannot serve before its queue delay ends is refused at once
// with reason rate and the hint, instead of waiting its delay out and
// ending as queue_timeout without one.
func TestRateRefusalBeyondTheQueueDelayIsImmediate(t *testing.T) {
	s := startServer(t, server.Options{})
	_, err := s.Admission().Enable(kernel.Options{
		Methods: map[string]kernel.Rule{"echo/Say": {Limits: []spi.Spec{tokenbucket.Spec(1, 1, time.Hour)}}},
		Queue:   kernel.QueuePolicy{MaxQueuedCalls: 4, MaxQueuedBytes: 1 << 20, MaxQueueDelay: time.Hour / 2},
	})
	require.NoError(t, err)
	c := dialRaw(t, s.addr)
	require.Nil(t, c.call("echo", "Say", nil).err)
	r := c.call("echo", "Say", nil)
	require.NotNil(t, r.err)
	assert.Equal(t, "rate", r.err.Reason)
	assert.Greater(t, r.err.RetryAfter, 59*time.Minute)
	assert.Zero(t, s.Stats().Admission.QueuedCalls)
	requireLedgerZero(t, s)
}
