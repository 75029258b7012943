package client_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/client"
	"github.com/sluicerpc/sluice/endpointpolicy"
	"github.com/sluicerpc/sluice/kernel"
	"github.com/sluicerpc/sluice/limiters/tokenbucket"
	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/protocol/status"
	"github.com/sluicerpc/sluice/server"
	"github.com/sluicerpc/sluice/spi"
)

// recording is an endpoint policy that records every decision and report,
// can refuse, panic, and is an io.Closer.
type recording struct {
	name string

	mu       sync.Mutex
	next     uint64
	issued   map[uint64]string // token -> endpoint
	reports  []report
	refuse   bool
	panicTry bool
	panicRep bool
	onReport func(r report)
	closes   atomic.Int32
}

type report struct {
	token   uint64
	outcome spi.AttemptOutcome
}

func newRecording(name string) *recording {
	return &recording{name: name, issued: map[uint64]string{}}
}

func (p *recording) TryAcquire(endpoint, method string) spi.EndpointDecision {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.panicTry {
		panic("policy " + p.name + " is broken")
	}
	if p.refuse {
		return spi.EndpointDecision{RetryAfter: time.Second}
	}
	p.next++
	p.issued[p.next] = endpoint
	return spi.EndpointDecision{Allowed: true, Token: p.next}
}

func (p *recording) Report(o spi.AttemptOutcome, token uint64) {
	p.mu.Lock()
	p.reports = append(p.reports, report{token, o})
	hook, panics := p.onReport, p.panicRep
	p.mu.Unlock()
	if hook != nil {
		hook(report{token, o})
	}
	if panics {
		panic("report panic")
	}
}

func (p *recording) Close() error {
	p.closes.Add(1)
	return nil
}

func (p *recording) snapshot() (issued int, reports []report) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.issued), append([]report(nil), p.reports...)
}

// requireExactlyOnce checks that every token p issued was reported to p
// exactly once and nothing else was.
func (p *recording) requireExactlyOnce(t testing.TB) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	seen := map[uint64]int{}
	for _, r := range p.reports {
		seen[r.token]++
	}
	for tok := range p.issued {
		require.Equal(t, 1, seen[tok], "policy %s: token %d reported %d times", p.name, tok, seen[tok])
	}
	require.Len(t, seen, len(p.issued), "policy %s got reports for tokens it never issued", p.name)
}

func TestEndpointPolicyModes(t *testing.T) {
	ts := startServer(t, echoMux(nil), server.Options{})
	c := dial(t, client.Options{}, ts.addr)
	assert.Equal(t, client.PolicySnapshot{}, c.EndpointPolicy())

	_, err := c.SetEndpointPolicy(nil)
	assert.ErrorIs(t, err, client.ErrNilPolicy)
	assert.Equal(t, client.PolicySnapshot{}, c.EndpointPolicy(), "nil changes nothing")

	a := newRecording("a")
	gen, err := c.SetEndpointPolicy(a)
	require.NoError(t, err)
	assert.Equal(t, client.PolicySnapshot{Generation: gen, Mode: client.PolicyCustom}, c.EndpointPolicy())
	_, err = c.CallRaw(ctxTimeout(t, 5*time.Second), "echo/Echo", []byte("x"))
	require.NoError(t, err)
	_, reports := a.snapshot()
	require.Len(t, reports, 1)
	assert.Equal(t, spi.OutcomeSuccess, reports[0].outcome.Kind)
	assert.True(t, reports[0].outcome.ResponseObserved)
	assert.Equal(t, uint64(1), reports[0].token)

	_, err = c.EnableCircuitBreaker(endpointpolicy.CircuitBreakerOptions{})
	assert.ErrorIs(t, err, client.ErrPolicyModeConflict)
	_, err = c.UpdateCircuitBreaker(endpointpolicy.CircuitBreakerOptions{})
	assert.ErrorIs(t, err, client.ErrPolicyModeConflict)
	assert.Equal(t, client.PolicyCustom, c.EndpointPolicy().Mode)

	gen2, err := c.DisableEndpointPolicy()
	require.NoError(t, err)
	assert.Greater(t, gen2, gen)
	assert.Equal(t, int32(1), a.closes.Load(), "a retired Closer with nothing outstanding is closed at once")
	again, err := c.DisableEndpointPolicy()
	require.NoError(t, err)
	assert.Equal(t, gen2, again, "disabling a disabled client changes nothing")

	gen3, err := c.EnableCircuitBreaker(endpointpolicy.CircuitBreakerOptions{})
	require.NoError(t, err)
	assert.Equal(t, client.PolicyCircuitBreaker, c.EndpointPolicy().Mode)
	_, err = c.SetEndpointPolicy(newRecording("b"))
	assert.ErrorIs(t, err, client.ErrPolicyModeConflict)
	_, err = c.EnableCircuitBreaker(endpointpolicy.CircuitBreakerOptions{})
	assert.ErrorIs(t, err, client.ErrPolicyModeConflict)
	_, err = c.UpdateCircuitBreaker(endpointpolicy.CircuitBreakerOptions{FailureRatio: 2})
	assert.Error(t, err, "invalid options")
	assert.Equal(t, gen3, c.EndpointPolicy().Generation, "an invalid update changes nothing")
	gen4, err := c.UpdateCircuitBreaker(endpointpolicy.CircuitBreakerOptions{FailureRatio: 0.9})
	require.NoError(t, err)
	assert.Greater(t, gen4, gen3)
	_, err = c.CallRaw(ctxTimeout(t, 5*time.Second), "echo/Echo", []byte("x"))
	require.NoError(t, err)
}

// TestReportGoesToTheAdmittingPolicy: an attempt admitted by A reports to A
// even though B was published while it ran; the next attempt uses B; A is
// closed once, after its last report.
func TestReportGoesToTheAdmittingPolicy(t *testing.T) {
	b := newBlocker(4)
	ts := startServer(t, echoMux(map[string]server.RawHandler{"echo/Block": b.handle}), server.Options{})
	c := dial(t, client.Options{}, ts.addr)
	pa, pb := newRecording("a"), newRecording("b")
	_, err := c.SetEndpointPolicy(pa)
	require.NoError(t, err)

	done := make(chan error, 1)
	go func() {
		_, err := c.CallRaw(ctxTimeout(t, 10*time.Second), "echo/Block", nil)
		done <- err
	}()
	<-b.started
	_, err = c.SetEndpointPolicy(pb)
	require.NoError(t, err)
	assert.Zero(t, pa.closes.Load(), "A still has an attempt to hear from")
	close(b.release)
	require.NoError(t, <-done)

	_, ra := pa.snapshot()
	require.Len(t, ra, 1)
	assert.Equal(t, spi.OutcomeSuccess, ra[0].outcome.Kind)
	assert.Positive(t, ra[0].outcome.Elapsed)
	issuedB, rb := pb.snapshot()
	assert.Zero(t, issuedB)
	assert.Empty(t, rb, "B never hears of A's attempt")
	// The call's report ended A's last hold: A is closed on a goroutine of
	// the client's, not the call's.
	require.Eventually(t, func() bool { return pa.closes.Load() == 1 }, 5*time.Second, time.Millisecond)

	_, err = c.CallRaw(ctxTimeout(t, 5*time.Second), "echo/Echo", nil)
	require.NoError(t, err)
	issuedB, rb = pb.snapshot()
	assert.Equal(t, 1, issuedB)
	assert.Len(t, rb, 1)
	pa.requireExactlyOnce(t)
	pb.requireExactlyOnce(t)
}

// TestUpdateBetweenAttemptsOfARetry: a call's first attempt is refused by
// the server's admission with a retry hint and reports to A; B is
// published before the retry, which B admits and which reports to B. On
// synctest's clock, so that the bucket (one token per 100ms) is still
// empty when the call comes, however slow the machine.
func TestUpdateBetweenAttemptsOfARetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newPipeNet()
		ts := n.startServer(t, echoMux(nil), server.Options{}, "")
		_, err := ts.srv.Admission().Enable(kernel.Options{Methods: map[string]kernel.Rule{
			"echo/Echo": {Limits: []spi.Spec{tokenbucket.Spec(1, 1, 100*time.Millisecond)}},
		}})
		require.NoError(t, err)
		c := n.dial(t, client.Options{}, ts.addr)
		_, err = c.CallRaw(ctxTimeout(t, 5*time.Second), "echo/Echo", nil) // spends the token
		require.NoError(t, err)

		pa, pb := newRecording("a"), newRecording("b")
		pa.onReport = func(report) {
			_, err := c.SetEndpointPolicy(pb) // between the attempts
			require.NoError(t, err)
		}
		_, err = c.SetEndpointPolicy(pa)
		require.NoError(t, err)
		_, err = c.CallRaw(ctxTimeout(t, 10*time.Second), "echo/Echo", []byte("x"))
		require.NoError(t, err)

		_, ra := pa.snapshot()
		require.Len(t, ra, 1)
		assert.Equal(t, spi.OutcomeRemoteError, ra[0].outcome.Kind)
		assert.Equal(t, uint8(protocol.CodeResourceExhausted), ra[0].outcome.Code)
		assert.True(t, ra[0].outcome.ResponseObserved)
		_, rb := pb.snapshot()
		require.Len(t, rb, 1)
		assert.Equal(t, spi.OutcomeSuccess, rb[0].outcome.Kind)
		pa.requireExactlyOnce(t)
		pb.requireExactlyOnce(t)
		synctest.Wait() // A is closed on a goroutine of the client's
		assert.Equal(t, int32(1), pa.closes.Load())
	})
}

// TestRefusalsPanicsAndOutcomes: a refused attempt owes no report and fails
// with ResourceExhausted (reason endpoint_policy); a TryAcquire panic fails
// the attempt with Internal; a Report panic is isolated; outcomes from the
// network reach the policy. On synctest's clock, so that the call with a
// 50ms deadline is sent, and reaches its handler, before the deadline.
func TestRefusalsPanicsAndOutcomes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBlocker(8)
		n := newPipeNet()
		ts := n.startServer(t, echoMux(map[string]server.RawHandler{
			"echo/Block": b.handle,
			"echo/Fail": func(context.Context, []byte) ([]byte, error) {
				return nil, status.New(protocol.CodeNotFound, "nothing")
			},
		}), server.Options{}, "")
		c := n.dial(t, client.Options{}, ts.addr)
		p := newRecording("p")
		_, err := c.SetEndpointPolicy(p)
		require.NoError(t, err)

		p.refuse = true
		_, err = c.CallRaw(ctxTimeout(t, 5*time.Second), "echo/Echo", nil)
		st := requireCode(t, err, protocol.CodeResourceExhausted)
		assert.Equal(t, "endpoint_policy", st.Reason)
		assert.Equal(t, time.Second, st.RetryAfter)
		_, reports := p.snapshot()
		assert.Empty(t, reports, "a refused attempt owes no report")
		p.refuse = false

		p.panicTry = true
		_, err = c.CallRaw(ctxTimeout(t, 5*time.Second), "echo/Echo", nil)
		st = requireCode(t, err, protocol.CodeInternal)
		assert.Contains(t, st.Message, "panicked in TryAcquire")
		p.panicTry = false

		p.panicRep = true
		_, err = c.CallRaw(ctxTimeout(t, 5*time.Second), "echo/Echo", []byte("ok"))
		require.NoError(t, err, "a Report panic does not fail the call")
		p.panicRep = false

		// Cancelled by the caller.
		ctx, cancel := context.WithCancel(context.Background())
		go func() { <-b.started; cancel() }()
		_, err = c.CallRaw(ctx, "echo/Block", nil)
		require.ErrorIs(t, err, context.Canceled)
		// Deadline.
		_, err = c.CallRaw(ctxTimeout(t, 50*time.Millisecond), "echo/Block", nil)
		require.Error(t, err)
		<-b.started
		// Remote error.
		_, err = c.CallRaw(ctxTimeout(t, 5*time.Second), "echo/Fail", nil)
		requireCode(t, err, protocol.CodeNotFound)
		// Unknown method: refused by the client itself before sending.
		_, err = c.CallRaw(ctxTimeout(t, 5*time.Second), "echo/Nope", nil)
		requireCode(t, err, protocol.CodeUnimplemented)
		// Connection closed by the server mid-call.
		go func() { <-b.started; ts.close(t) }()
		_, err = c.CallRaw(ctxTimeout(t, 5*time.Second), "echo/Block", nil)
		require.Error(t, err)

		require.Eventually(t, func() bool { _, r := p.snapshot(); return len(r) == 6 }, 5*time.Second, time.Millisecond)
		_, reports = p.snapshot()
		var kinds []spi.OutcomeKind
		for _, r := range reports {
			kinds = append(kinds, r.outcome.Kind)
		}
		assert.Equal(t, []spi.OutcomeKind{
			spi.OutcomeCancelled, spi.OutcomeDeadlineExceeded, spi.OutcomeRemoteError,
			spi.OutcomeCancelled, // unknown method: abandoned by the client before sending
			spi.OutcomeConnectionClosed,
		}, kinds[1:], "%v", kinds)
		p.requireExactlyOnce(t)
	})
}

// TestConcurrentReplacementsLedger: calls run while policies are replaced
// and disabled in a loop; every admitted attempt reports exactly once to
// its own policy, and every retired policy is closed exactly once.
func TestConcurrentReplacementsLedger(t *testing.T) {
	ts := startServer(t, echoMux(nil), server.Options{})
	c := dial(t, client.Options{}, ts.addr)
	var (
		mu       sync.Mutex
		policies []*recording
		stop     atomic.Bool
		wg       sync.WaitGroup
	)
	wg.Go(func() {
		for i := 0; !stop.Load(); i++ {
			if i%5 == 4 {
				_, err := c.DisableEndpointPolicy()
				assert.NoError(t, err)
				continue
			}
			p := newRecording(fmt.Sprint(i))
			mu.Lock()
			policies = append(policies, p)
			mu.Unlock()
			_, err := c.SetEndpointPolicy(p)
			assert.NoError(t, err)
			time.Sleep(100 * time.Microsecond)
		}
	})
	var calls atomic.Int64
	for range 8 {
		wg.Go(func() {
			for !stop.Load() {
				_, err := c.CallRaw(ctxTimeout(t, 10*time.Second), "echo/Echo", []byte("x"))
				if !assert.NoError(t, err) {
					return
				}
				calls.Add(1)
			}
		})
	}
	// The calls go on until both there were 1,600 and the policy was
	// replaced more than three times meanwhile, whichever the scheduler
	// let happen first.
	replaced := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(policies)
	}
	assert.Eventually(t, func() bool { return calls.Load() >= 1600 && replaced() > 3 }, time.Minute, time.Millisecond)
	stop.Store(true)
	wg.Wait()
	_, err := c.DisableEndpointPolicy()
	require.NoError(t, err)
	// Policies drained by a call's report are closed on goroutines of the
	// client's; Close waits for them.
	require.NoError(t, c.Close())

	var admitted int
	for _, p := range policies {
		p.requireExactlyOnce(t)
		n, _ := p.snapshot()
		admitted += n
		assert.Equal(t, int32(1), p.closes.Load(), "policy %s closed %d times", p.name, p.closes.Load())
	}
	t.Logf("%d policies, %d admitted attempts, %d calls", len(policies), admitted, calls.Load())
	assert.Greater(t, len(policies), 3)
}

// TestPolicyAfterClose: publication against Close is deterministic: after
// Close every control fails with ErrClientClosed and the last policy is
// closed once its attempts reported.
func TestPolicyAfterClose(t *testing.T) {
	ts := startServer(t, echoMux(nil), server.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, []string{ts.addr}, client.Options{})
	require.NoError(t, err)
	p := newRecording("p")
	_, err = c.SetEndpointPolicy(p)
	require.NoError(t, err)
	require.NoError(t, c.Close())
	assert.Equal(t, int32(1), p.closes.Load())
	_, err = c.SetEndpointPolicy(newRecording("q"))
	assert.ErrorIs(t, err, client.ErrClientClosed)
	_, err = c.DisableEndpointPolicy()
	assert.ErrorIs(t, err, client.ErrClientClosed)
	_, err = c.EnableCircuitBreaker(endpointpolicy.CircuitBreakerOptions{})
	assert.True(t, errors.Is(err, client.ErrClientClosed))
}
