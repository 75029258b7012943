package client_test

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/client"
	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/protocol/status"
	"github.com/sluicerpc/sluice/server"
)

func TestDialSucceedsWithOneEndpointDown(t *testing.T) {
	down := deadAddr(t)
	ts := startServer(t, echoMux(nil), server.Options{})
	c := dial(t, client.Options{}, down, ts.addr)
	ctx := ctxTimeout(t, 5*time.Second)
	for i := range 20 {
		_, err := c.CallRaw(ctx, "echo/Echo", []byte{byte(i)})
		require.NoError(t, err)
	}
}

func TestDialFailsWhenNoEndpointIsReachable(t *testing.T) {
	_, err := client.Dial(ctxTimeout(t, 5*time.Second), []string{deadAddr(t), deadAddr(t)}, client.Options{})
	require.Error(t, err)
	require.Contains(t, err.Error(), "connection refused")
	requireCode(t, err, protocol.CodeUnavailable)
}

// deadAddr returns a loopback address where nothing listens.
func deadAddr(t testing.TB) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}

func TestClosedServerCallsGoToTheOther(t *testing.T) {
	a := startServer(t, echoMux(nil), server.Options{})
	b := startServer(t, echoMux(nil), server.Options{})
	c := dial(t, client.Options{}, a.addr, b.addr)
	ctx := ctxTimeout(t, 10*time.Second)
	for range 10 {
		_, err := c.CallRaw(ctx, "echo/Echo", []byte("x"))
		require.NoError(t, err)
	}
	require.Positive(t, a.srv.Stats().Calls)

	a.close(t)
	// Idempotent calls survive even a call racing with the close; every
	// call ends on b.
	before := b.srv.Stats().Calls
	for range 50 {
		out, err := c.CallRaw(ctx, "echo/Echo", []byte("y"), client.Idempotent())
		require.NoError(t, err)
		require.Equal(t, "y", string(out))
	}
	require.Equal(t, before+50, b.srv.Stats().Calls)
}

func TestIdempotentMethodsOption(t *testing.T) {
	a := startServer(t, echoMux(nil), server.Options{})
	b := startServer(t, echoMux(nil), server.Options{})
	c := dial(t, client.Options{IdempotentMethods: []string{"echo/Echo"}}, a.addr, b.addr)
	ctx := ctxTimeout(t, 10*time.Second)
	a.close(t)
	for range 20 {
		_, err := c.CallRaw(ctx, "echo/Echo", []byte("y"))
		require.NoError(t, err)
	}
}

func TestStopDuringTraffic(t *testing.T) {
	var inA atomic.Int64
	slowA := func(_ context.Context, req []byte) ([]byte, error) {
		inA.Add(1)
		time.Sleep(100 * time.Millisecond)
		return req, nil
	}
	slowB := func(_ context.Context, req []byte) ([]byte, error) {
		time.Sleep(time.Millisecond)
		return req, nil
	}
	a := startServer(t, echoMux(map[string]server.RawHandler{"svc/Slow": slowA}), server.Options{})
	b := startServer(t, echoMux(map[string]server.RawHandler{"svc/Slow": slowB}), server.Options{})
	c := dial(t, client.Options{}, a.addr, b.addr)
	ctx := ctxTimeout(t, 10*time.Second)

	var wg sync.WaitGroup
	var ok, failed atomic.Int64
	stop := make(chan struct{})
	for range 16 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				out, err := c.CallRaw(ctx, "svc/Slow", []byte("z"))
				if err != nil {
					// Only clean failures: a call that reached the
					// draining server after its GoAway.
					assert.Equal(t, protocol.CodeUnavailable, codeOf(err), "%v", err)
					failed.Add(1)
					continue
				}
				assert.Equal(t, "z", string(out))
				ok.Add(1)
			}
		})
	}
	require.Eventually(t, func() bool { return inA.Load() >= 8 }, 5*time.Second, time.Millisecond)
	stopCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, a.srv.Stop(stopCtx), "the calls in flight on a finish")

	// New calls go to b.
	afterStop := ok.Load()
	require.Eventually(t, func() bool { return ok.Load() > afterStop+50 }, 5*time.Second, time.Millisecond)
	close(stop)
	wg.Wait()
	t.Logf("ok=%d failed=%d a.calls=%d b.calls=%d", ok.Load(), failed.Load(), a.srv.Stats().Calls, b.srv.Stats().Calls)
	require.Equal(t, a.srv.Stats().Calls, uint64(inA.Load()), "every call a accepted ran")
}

func codeOf(err error) protocol.Code { return status.Code(err) }

// TestGoAwayNotProcessedIsRetried uses a scripted server: its first
// connection answers the request with GoAway(LastID 0), the next one
// answers normally. The client retries on a new connection.
func TestGoAwayNotProcessedIsRetried(t *testing.T) {
	fs := startFakeServer(t, func(conn int, id uint64, w func([]byte)) {
		if conn == 0 {
			f, _ := protocol.AppendGoAway(nil, &protocol.GoAway{LastID: 0, Message: "restarting"})
			w(f)
			return
		}
		f, _ := protocol.AppendResponse(nil, id, &protocol.Response{Body: []byte("second")})
		w(f)
	})
	c := dial(t, client.Options{}, fs.addr)
	out, err := c.CallRaw(ctxTimeout(t, 5*time.Second), "svc/M", []byte("q"))
	require.NoError(t, err)
	require.Equal(t, "second", string(out))
	require.Equal(t, []uint64{1, 1}, fs.ids(), "one request per connection, each with id 1")
}

func TestGoAwayNotProcessedWithoutRetriesIsUnavailable(t *testing.T) {
	fs := startFakeServer(t, func(_ int, _ uint64, w func([]byte)) {
		f, _ := protocol.AppendGoAway(nil, &protocol.GoAway{LastID: 0, Message: "restarting"})
		w(f)
	})
	c := dial(t, client.Options{MaxAttempts: 2}, fs.addr)
	_, err := c.CallRaw(ctxTimeout(t, 5*time.Second), "svc/M", []byte("q"))
	st := requireCode(t, err, protocol.CodeUnavailable)
	require.Contains(t, st.Message, "not processed")
	require.Len(t, fs.ids(), 2)
}

func TestConnectionLossIsNotRetriedForNonIdempotent(t *testing.T) {
	fs := startFakeServer(t, func(_ int, _ uint64, _ func([]byte)) {
		// Drop the connection with the request in flight.
	})
	fs.closeAfterRequest = true
	c := dial(t, client.Options{}, fs.addr)
	_, err := c.CallRaw(ctxTimeout(t, 5*time.Second), "svc/M", []byte("q"))
	requireCode(t, err, protocol.CodeUnavailable)
	require.Len(t, fs.ids(), 1, "a request that may have run is not retried")

	_, err = c.CallRaw(ctxTimeout(t, 5*time.Second), "svc/M", []byte("q"), client.Idempotent())
	requireCode(t, err, protocol.CodeUnavailable)
	require.Len(t, fs.ids(), 1+3, "an idempotent one is, up to MaxAttempts")
}

func TestConnectionLevelErrorEndsCallsWithItsStatus(t *testing.T) {
	fs := startFakeServer(t, func(_ int, _ uint64, w func([]byte)) {
		f, _ := protocol.AppendError(nil, 0, &protocol.ErrorFrame{Code: protocol.CodeInternal, Message: "server bug"})
		w(f)
	})
	fs.closeAfterRequest = true
	c := dial(t, client.Options{}, fs.addr)
	_, err := c.CallRaw(ctxTimeout(t, 5*time.Second), "svc/M", []byte("q"))
	st := requireCode(t, err, protocol.CodeInternal)
	require.Equal(t, "server bug", st.Message)
	require.Len(t, fs.ids(), 1)
}
