package client_test

import (
	"runtime"
	"testing"
	"time"
	"weak"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/client"
	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/server"
	"github.com/sluicerpc/sluice/spi"
)

// TestGoAwayOutcomeReachesThePolicy: a GoAway that left the request
// unprocessed is reported as goaway to the policy that allowed the attempt;
// the retry on a new connection is another attempt, reported as success.
func TestGoAwayOutcomeReachesThePolicy(t *testing.T) {
	fs := startFakeServer(t, func(conn int, id uint64, w func([]byte)) {
		if conn == 0 {
			f, _ := protocol.AppendGoAway(nil, &protocol.GoAway{LastID: 0, Message: "restarting"})
			w(f)
			return
		}
		f, _ := protocol.AppendResponse(nil, id, &protocol.Response{Body: []byte("ok")})
		w(f)
	})
	c := dial(t, client.Options{}, fs.addr)
	p := newRecording("p")
	_, err := c.SetEndpointPolicy(p)
	require.NoError(t, err)
	_, err = c.CallRaw(ctxTimeout(t, 5*time.Second), "svc/M", nil)
	require.NoError(t, err)
	_, reports := p.snapshot()
	require.Len(t, reports, 2)
	assert.Equal(t, spi.OutcomeGoAway, reports[0].outcome.Kind)
	assert.Equal(t, spi.OutcomeSuccess, reports[1].outcome.Kind)
	p.requireExactlyOnce(t)
}

// TestSendFailureOutcomeReachesThePolicy: with its only endpoint gone, an
// attempt that could not be written is reported as send_failure.
func TestSendFailureOutcomeReachesThePolicy(t *testing.T) {
	ts := startServer(t, echoMux(nil), server.Options{})
	c := dial(t, client.Options{MaxAttempts: 1}, ts.addr)
	p := newRecording("p")
	_, err := c.SetEndpointPolicy(p)
	require.NoError(t, err)
	ts.close(t)
	// The first attempt after the close may still find the old connection
	// (connection_closed); once the client has seen it go, the request
	// cannot be written at all (send_failure).
	require.Eventually(t, func() bool {
		_, err := c.CallRaw(ctxTimeout(t, 5*time.Second), "echo/Echo", nil)
		require.Error(t, err)
		_, reports := p.snapshot()
		last := reports[len(reports)-1].outcome
		return last.Kind == spi.OutcomeSendFailure && !last.ResponseObserved
	}, 10*time.Second, 10*time.Millisecond)
	p.requireExactlyOnce(t)
}

// gate refuses every attempt, after waiting on hold.
type gate struct {
	*recording
	entered, hold chan struct{}
}

func (g *gate) TryAcquire(string, string) spi.EndpointDecision {
	g.entered <- struct{}{}
	<-g.hold
	return spi.EndpointDecision{RetryAfter: time.Millisecond}
}

// TestRefusalAtThePublicationBoundary: A refuses an attempt while B is
// being published; nobody is owed a report for it, and the next call is
// decided by B.
func TestRefusalAtThePublicationBoundary(t *testing.T) {
	ts := startServer(t, echoMux(nil), server.Options{})
	c := dial(t, client.Options{MaxAttempts: 1}, ts.addr)
	a := &gate{recording: newRecording("a"), entered: make(chan struct{}, 1), hold: make(chan struct{})}
	b := newRecording("b")
	_, err := c.SetEndpointPolicy(a)
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() {
		_, err := c.CallRaw(ctxTimeout(t, 5*time.Second), "echo/Echo", nil)
		done <- err
	}()
	<-a.entered
	_, err = c.SetEndpointPolicy(b) // published while A decides
	require.NoError(t, err)
	assert.Zero(t, a.closes.Load(), "A is still deciding an attempt")
	close(a.hold)
	st := requireCode(t, <-done, protocol.CodeResourceExhausted)
	assert.Equal(t, "endpoint_policy", st.Reason)
	// Closed once its refused attempt released it (no report owed), on a
	// goroutine of the client's.
	require.Eventually(t, func() bool { return a.closes.Load() == 1 }, 5*time.Second, time.Millisecond)
	_, ra := a.snapshot()
	assert.Empty(t, ra)

	_, err = c.CallRaw(ctxTimeout(t, 5*time.Second), "echo/Echo", nil)
	require.NoError(t, err)
	issued, rb := b.snapshot()
	assert.Equal(t, 1, issued)
	assert.Len(t, rb, 1)
}

// TestRetiredPolicyIsReleased: once replaced and drained, the client keeps
// no reference to a policy: the garbage collector reclaims it.
func TestRetiredPolicyIsReleased(t *testing.T) {
	ts := startServer(t, echoMux(nil), server.Options{})
	c := dial(t, client.Options{}, ts.addr)
	p := newRecording("old")
	wp := weak.Make(p)
	_, err := c.SetEndpointPolicy(p)
	require.NoError(t, err)
	_, err = c.CallRaw(ctxTimeout(t, 5*time.Second), "echo/Echo", nil)
	require.NoError(t, err)
	_, err = c.SetEndpointPolicy(newRecording("new"))
	require.NoError(t, err)
	require.Equal(t, int32(1), p.closes.Load())
	p = nil
	require.Eventually(t, func() bool {
		runtime.GC()
		return wp.Value() == nil
	}, 10*time.Second, 10*time.Millisecond, "the retired policy is still reachable")
}
