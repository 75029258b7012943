package client_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/client"
	"github.com/sluicerpc/sluice/message"
	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/protocol/status"
	"github.com/sluicerpc/sluice/server"
)

func TestCallRawRoundTrip(t *testing.T) {
	ts := startServer(t, echoMux(nil), server.Options{})
	c := dial(t, client.Options{}, ts.addr)

	out, err := c.CallRaw(ctxTimeout(t, 5*time.Second), "echo/Echo", []byte("hello"))
	require.NoError(t, err)
	require.Equal(t, []byte("hello"), out)

	// Empty body, and no deadline at all.
	out, err = c.CallRaw(context.Background(), "echo/Echo", nil)
	require.NoError(t, err)
	require.Empty(t, out)
}

func TestCallRawResponseIsOwnedByCaller(t *testing.T) {
	ts := startServer(t, echoMux(nil), server.Options{})
	c := dial(t, client.Options{}, ts.addr)
	ctx := ctxTimeout(t, 5*time.Second)

	first, err := c.CallRaw(ctx, "echo/Echo", []byte("first"))
	require.NoError(t, err)
	for i := range 20 {
		_, err := c.CallRaw(ctx, "echo/Echo", []byte(fmt.Sprintf("other-%d", i)))
		require.NoError(t, err)
	}
	require.Equal(t, "first", string(first))
}

type greetReq struct {
	Name string `json:"name"`
}

type greetResp struct {
	Greeting string `json:"greeting"`
	Len      int    `json:"len"`
}

func TestCallTypedJSON(t *testing.T) {
	mux := server.NewMux()
	server.Handle(mux, "greeter", "Greet", message.JSON[greetReq](), message.JSON[greetResp](),
		func(_ context.Context, r *greetReq) (*greetResp, error) {
			if r.Name == "" {
				return nil, status.New(protocol.CodeInvalidArgument, "name required")
			}
			return &greetResp{Greeting: "hello " + r.Name, Len: len(r.Name)}, nil
		})
	ts := startServer(t, mux, server.Options{})
	c := dial(t, client.Options{}, ts.addr)
	ctx := ctxTimeout(t, 5*time.Second)

	resp, err := client.Call(ctx, c, "greeter/Greet", &greetReq{Name: "ada"}, message.JSON[greetReq](), message.JSON[greetResp]())
	require.NoError(t, err)
	require.Equal(t, &greetResp{Greeting: "hello ada", Len: 3}, resp)

	_, err = client.Call(ctx, c, "greeter/Greet", &greetReq{}, message.JSON[greetReq](), message.JSON[greetResp]())
	st := requireCode(t, err, protocol.CodeInvalidArgument)
	require.Equal(t, "name required", st.Message)

	// A nil request does not encode: InvalidArgument without sending.
	_, err = client.Call(ctx, c, "greeter/Greet", nil, message.JSON[greetReq](), message.JSON[greetResp]())
	requireCode(t, err, protocol.CodeInvalidArgument)
	require.Equal(t, uint64(2), ts.srv.Stats().Calls)
}

func TestOneWayReachesHandler(t *testing.T) {
	got := make(chan string, 1)
	ts := startServer(t, echoMux(map[string]server.RawHandler{
		"log/Write": func(_ context.Context, req []byte) ([]byte, error) {
			got <- string(req)
			return nil, nil
		},
	}), server.Options{})
	c := dial(t, client.Options{}, ts.addr)

	require.NoError(t, c.OneWay(ctxTimeout(t, 5*time.Second), "log/Write", []byte("fire and forget")))
	require.Equal(t, "fire and forget", recv(t, got))

	// The connection carries unary calls after the one-way call.
	out, err := c.CallRaw(ctxTimeout(t, 5*time.Second), "echo/Echo", []byte("x"))
	require.NoError(t, err)
	require.Equal(t, "x", string(out))

	err = c.OneWay(ctxTimeout(t, 5*time.Second), "log/Missing", nil)
	requireCode(t, err, protocol.CodeUnimplemented)
}

func TestConcurrentCallsOnOneConnection(t *testing.T) {
	ts := startServer(t, echoMux(map[string]server.RawHandler{
		"echo/Jitter": func(_ context.Context, req []byte) ([]byte, error) {
			time.Sleep(time.Duration(req[0]%5) * time.Millisecond)
			return append([]byte("re:"), req...), nil
		},
	}), server.Options{})
	c := dial(t, client.Options{}, ts.addr)
	ctx := ctxTimeout(t, 10*time.Second)

	const workers, perWorker = 64, 20
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range perWorker {
				req := fmt.Appendf(nil, "%c-w%d-i%d", byte(w+i), w, i)
				out, err := c.CallRaw(ctx, "echo/Jitter", req)
				if !assert.NoError(t, err) {
					return
				}
				assert.Equal(t, "re:"+string(req), string(out))
			}
		})
	}
	wg.Wait()
	st := ts.srv.Stats()
	require.Equal(t, uint64(workers*perWorker), st.Calls)
	require.Equal(t, uint64(1), st.ConnectionsAdmitted, "all calls share one connection")
}

func TestUnknownMethodIsUnimplementedWithoutRoundTrip(t *testing.T) {
	ts := startServer(t, echoMux(nil), server.Options{})
	c := dial(t, client.Options{}, ts.addr)

	_, err := c.CallRaw(ctxTimeout(t, 5*time.Second), "echo/Nope", []byte("x"))
	requireCode(t, err, protocol.CodeUnimplemented)
	_, err = c.CallRaw(ctxTimeout(t, 5*time.Second), "nosvc/Echo", []byte("x"))
	requireCode(t, err, protocol.CodeUnimplemented)

	st := ts.srv.Stats()
	require.Zero(t, st.Calls)
	require.Zero(t, st.Refusals["unimplemented"], "nothing was sent")
}

func TestHandlerErrorIsReturned(t *testing.T) {
	ts := startServer(t, echoMux(map[string]server.RawHandler{
		"echo/Fail": func(context.Context, []byte) ([]byte, error) {
			return nil, &status.Error{Code: protocol.CodeNotFound, Message: "no such thing"}
		},
		"echo/Plain": func(context.Context, []byte) ([]byte, error) {
			return nil, errors.New("plain failure")
		},
		"echo/Panic": func(context.Context, []byte) ([]byte, error) {
			panic("boom")
		},
	}), server.Options{})
	c := dial(t, client.Options{}, ts.addr)
	ctx := ctxTimeout(t, 5*time.Second)

	_, err := c.CallRaw(ctx, "echo/Fail", nil)
	var st *status.Error
	require.ErrorAs(t, err, &st)
	require.Equal(t, protocol.CodeNotFound, st.Code)
	require.Equal(t, "no such thing", st.Message)

	_, err = c.CallRaw(ctx, "echo/Plain", nil)
	st = requireCode(t, err, protocol.CodeUnknown)
	require.Contains(t, st.Message, "plain failure")

	_, err = c.CallRaw(ctx, "echo/Panic", nil, client.Idempotent())
	st = requireCode(t, err, protocol.CodeInternal)
	require.Contains(t, st.Message, "boom")
	require.Equal(t, uint64(1), ts.srv.Stats().HandlerPanics, "Internal is not retried")

	// The connection survives all of them.
	out, err := c.CallRaw(ctx, "echo/Echo", []byte("ok"))
	require.NoError(t, err)
	require.Equal(t, "ok", string(out))
}

func TestExpiredContextFailsWithoutSending(t *testing.T) {
	ts := startServer(t, echoMux(nil), server.Options{})
	c := dial(t, client.Options{}, ts.addr)

	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	_, err := c.CallRaw(ctx, "echo/Echo", []byte("x"))
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Equal(t, protocol.CodeDeadlineExceeded, status.Code(err))

	ctx2, cancel2 := context.WithCancel(context.Background())
	cancel2()
	_, err = c.CallRaw(ctx2, "echo/Echo", []byte("x"))
	require.ErrorIs(t, err, context.Canceled)
	require.Zero(t, ts.srv.Stats().Calls)
}

// TestDeadlineBecomesBudget runs on synctest's clock: the call returns at
// its deadline, not a moment of a loaded machine later.
func TestDeadlineBecomesBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBlocker(1)
		n := newPipeNet()
		ts := n.startServer(t, echoMux(map[string]server.RawHandler{"slow/Block": b.handle}), server.Options{}, "")
		c := n.dial(t, client.Options{}, ts.addr)
		defer close(b.release)

		const timeout = 150 * time.Millisecond
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		start := time.Now()
		_, err := c.CallRaw(ctx, "slow/Block", nil)
		elapsed := time.Since(start)
		// Either our context or the server's budget ends the call first.
		require.Equal(t, protocol.CodeDeadlineExceeded, status.Code(err), "%v", err)
		require.GreaterOrEqual(t, elapsed, timeout-5*time.Millisecond)
		require.Less(t, elapsed, timeout+time.Second, "the client returns about at its deadline")

		budget := recv(t, b.deadline)
		require.Positive(t, budget, "the handler's context has the budget as its deadline")
		require.LessOrEqual(t, budget, timeout)
		// The handler's context ends: by the budget or by our Cancel(deadline).
		require.Error(t, recv(t, b.ended))
	})
}

func TestCancelSendsCancelFrame(t *testing.T) {
	b := newBlocker(1)
	ts := startServer(t, echoMux(map[string]server.RawHandler{"slow/Block": b.handle}), server.Options{})
	c := dial(t, client.Options{}, ts.addr)
	defer close(b.release)

	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := c.CallRaw(ctx, "slow/Block", nil)
		errc <- err
	}()
	recv(t, b.started)
	require.Equal(t, time.Duration(-1), recv(t, b.deadline), "no deadline, no budget")
	cancel()
	err := recv(t, errc)
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorIs(t, recv(t, b.ended), context.Canceled, "the handler's context was cancelled by the Cancel frame")
	require.Eventually(t, func() bool { return ts.srv.Stats().Cancels == 1 }, 5*time.Second, 5*time.Millisecond)

	out, err := c.CallRaw(ctxTimeout(t, 5*time.Second), "echo/Echo", []byte("after"))
	require.NoError(t, err)
	require.Equal(t, "after", string(out))
}

// TestOversizedRequestRejectedLocally: a request whose frame would exceed
// the server's max frame size is refused before it is sent. The body is
// incompressible: a compressible one is sent compressed and fits.
func TestOversizedRequestRejectedLocally(t *testing.T) {
	lim := protocol.DefaultLimits()
	lim.MaxFrameSize = protocol.MinFrameSize
	ts := startServer(t, echoMux(nil), server.Options{Limits: &lim})
	c := dial(t, client.Options{}, ts.addr)

	_, err := c.CallRaw(ctxTimeout(t, 5*time.Second), "echo/Echo", incompressible(2*protocol.MinFrameSize))
	requireCode(t, err, protocol.CodeResourceExhausted)
	require.Zero(t, ts.srv.Stats().Calls)
	_, err = c.CallRaw(ctxTimeout(t, 5*time.Second), "echo/Echo", []byte("small"))
	require.NoError(t, err)
}

// TestResponseOverClientMaxFrameSize: a response larger than the client's
// max frame size fails its call and the connection stays usable. The
// body is incompressible (a compressible one is sent compressed and fits).
func TestResponseOverClientMaxFrameSize(t *testing.T) {
	big := incompressible(3 * protocol.MinFrameSize)
	ts := startServer(t, echoMux(map[string]server.RawHandler{
		"big/Get": func(context.Context, []byte) ([]byte, error) { return big, nil },
	}), server.Options{})
	c := dial(t, client.Options{MaxFrameSize: protocol.MinFrameSize}, ts.addr)

	_, err := c.CallRaw(ctxTimeout(t, 5*time.Second), "big/Get", nil)
	requireCode(t, err, protocol.CodeResourceExhausted)
	out, err := c.CallRaw(ctxTimeout(t, 5*time.Second), "echo/Echo", []byte("still fine"))
	require.NoError(t, err)
	require.Equal(t, "still fine", string(out))
}
