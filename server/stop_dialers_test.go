package server_test

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/server"
)

// dialOutcome is how one racing dialer's connection ended.
type dialOutcome struct {
	refused bool // the dial itself failed: the listener was closed
	acked   bool // the server answered the handshake
	goAway  bool // and then sent a GoAway
	// hung is set when the server neither answered nor closed the
	// connection within the hang guard: the failure this test looks for.
	hung bool
	err  error
}

// dialThrough dials addr, waits for gate (if not nil) before it sends its
// Handshake, sends one Say request once the handshake is answered if call
// is set, and reads until the server closes the connection. It runs on its own
// goroutine and reports instead of failing the test.
func dialThrough(addr string, gate <-chan struct{}, call bool) (o dialOutcome) {
	nc, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return dialOutcome{refused: true, err: err}
	}
	defer func() { _ = nc.Close() }()
	_ = nc.SetDeadline(time.Now().Add(60 * time.Second)) // the hang guard
	if gate != nil {
		<-gate
	}
	hs, err := protocol.AppendHandshake(nil, &protocol.Handshake{Version: protocol.Version, MaxFrameSize: 1 << 20})
	if err != nil {
		panic(err)
	}
	if _, err := nc.Write(hs); err != nil {
		return dialOutcome{err: err}
	}
	rd := protocol.NewReader(nc, protocol.DefaultLimits())
	for {
		h, payload, err := rd.ReadFrame()
		if err != nil {
			var ne net.Error
			o.hung = errors.As(err, &ne) && ne.Timeout()
			o.err = err
			return o
		}
		switch h.Type {
		case protocol.FrameHandshakeAck:
			var ack protocol.HandshakeAck
			if protocol.ParseHandshakeAck(h, payload, &ack) != nil {
				return dialOutcome{err: errors.New("malformed HandshakeAck")}
			}
			o.acked = true
			if !call {
				continue
			}
			// echo/Say is the first method of the first service.
			req, _ := protocol.AppendRequest(nil, 1, &protocol.Request{Body: []byte("x")})
			_, _ = nc.Write(req) // the server may be closing already
		case protocol.FrameGoAway:
			o.goAway = true
		}
	}
}

// TestStopRacingDialersGivesBackEverySlot: Stop runs while 100 clients are
// in the middle of their handshake (connected, Handshake not sent yet) and
// 200 more are dialing (a quarter of them admitted already), handshaking
// and calling. Every client is answered or closed, never left
// hanging; each of the 100 admitted before Stop completes its handshake and
// gets the GoAway; once Stop has returned no connection or handshake slot
// is held and no goroutine is left.
func TestStopRacingDialersGivesBackEverySlot(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	const stalled, fresh = 100, 200
	s := startServer(t, server.Options{
		Connections:      server.ConnectionLimits{MaxConnections: 1024, MaxHandshakes: 1024, MaxHandshakesPerAddress: 1024}, // every dialer is 127.0.0.1
		HandshakeTimeout: 5 * time.Minute,                                                                                   // never the cause here: Stop is
	})

	gate := make(chan struct{})
	stalledOutcomes := make(chan dialOutcome, stalled)
	freshOutcomes := make(chan dialOutcome, fresh)
	var dialers sync.WaitGroup
	for range stalled {
		dialers.Go(func() { stalledOutcomes <- dialThrough(s.addr, gate, false) })
	}
	require.Eventually(t, func() bool { return s.Stats().Handshakes == stalled }, 60*time.Second, time.Millisecond,
		"handshakes in progress: %d", s.Stats().Handshakes)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second) // a hang guard
	defer cancel()
	stopped := make(chan error, 1)
	for range fresh {
		dialers.Go(func() { freshOutcomes <- dialThrough(s.addr, nil, true) })
	}
	// Stop once a quarter of the fresh dialers are in: the rest race it.
	require.Eventually(t, func() bool { return s.Stats().ConnectionsAdmitted >= stalled+fresh/4 }, 60*time.Second, time.Millisecond)
	go func() { stopped <- s.Stop(ctx) }()
	close(gate)
	dialers.Wait()
	close(stalledOutcomes)
	close(freshOutcomes)
	require.NoError(t, <-stopped, "Stop did not drain within its hang guard")

	st := s.Stats()
	assert.Zero(t, st.Connections, "connection slots held after Stop returned")
	assert.Zero(t, st.Handshakes, "handshake slots held after Stop returned")

	for o := range stalledOutcomes {
		require.False(t, o.hung, "a client in handshake was left hanging: %v", o.err)
		require.True(t, o.acked && o.goAway, "a connection admitted before Stop completes its handshake and gets the GoAway: %+v", o)
	}
	var refused, closed, acked, goAway int
	for o := range freshOutcomes {
		require.False(t, o.hung, "a client was left hanging: %v", o.err)
		switch {
		case o.refused:
			refused++
		case o.goAway:
			goAway++
		case o.acked:
			acked++ // the request's unread bytes can reset the connection before the GoAway is read
		default:
			closed++
		}
	}
	t.Logf("of %d dialers racing Stop: dial refused %d, closed before the ack %d, acked %d, acked and GoAway %d",
		fresh, refused, closed, acked, goAway)
}

// TestStopWaitsForTheConnectionBeingAdmitted: a connection the accept loop
// admitted (it holds a connection and a handshake slot) just as Stop began
// is closed by the accept loop itself, since the server no longer
// registers connections; Stop returns only once it has, so that no slot
// and no connection outlives Stop. On synctest's clock the accept loop is
// held at that point by a hook, for as long as the test likes.
func TestStopWaitsForTheConnectionBeingAdmitted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := startPipeServer(t, server.Options{})
		admitted, proceed := make(chan struct{}), make(chan struct{})
		release := sync.OnceFunc(func() { close(proceed) })
		t.Cleanup(release) // before the server's cleanup, even on failure
		var first atomic.Bool
		server.SetTestHooks(s.Server, &server.TestHooks{AfterAdmit: func() {
			if first.CompareAndSwap(false, true) {
				close(admitted)
				<-proceed
			}
		}})
		c := s.dialNoHandshake(t)
		<-admitted
		require.Equal(t, 1, s.Stats().Connections)

		stopped := make(chan error, 1)
		go func() { stopped <- s.Stop(context.Background()) }()
		synctest.Wait()
		select {
		case err := <-stopped:
			t.Fatalf("Stop returned (%v) while the accept loop held a connection's slots: %+v", err, s.Stats())
		default:
		}
		release()
		require.NoError(t, <-stopped)
		st := s.Stats()
		assert.Zero(t, st.Connections, "a connection slot outlived Stop")
		assert.Zero(t, st.Handshakes, "a handshake slot outlived Stop")
		assert.Nil(t, c.expectClosed(), "the connection is closed without a frame")
	})
}
