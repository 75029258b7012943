package server_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/sluicerpc/sluice/kernel"
	"github.com/sluicerpc/sluice/limiters/concurrency"
	"github.com/sluicerpc/sluice/message/protomsg"
	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/server"
	"github.com/sluicerpc/sluice/spi"
)

// requireLedgerZero waits until every call the server ran has given back
// its reservation and permit, and checks that nothing is queued. It waits
// for the admission scopes too, not only for the server's figures: a
// queued call granted a unit holds it for a moment before it reserves its
// call slot (or, its client gone, gives the unit back unused), while the
// server's figures already read zero.
func requireLedgerZero(t *testing.T, s *testServer) {
	t.Helper()
	require.Eventually(t, func() bool {
		st := s.Stats()
		if st.ServerCalls.Active != 0 || st.ServerCalls.Reserved != 0 || st.Admission.QueuedCalls != 0 {
			return false
		}
		if g := st.Governor; g.Decodes.Used != 0 || g.Retained.Used != 0 || g.Decoded.Used != 0 || g.Stream.Used != 0 {
			return false
		}
		for _, sc := range st.Admission.Scopes {
			if (strings.HasSuffix(sc.Name, "/concurrency") && sc.InUse != 0) || sc.Waiters != 0 {
				return false
			}
		}
		return true
	}, 10*time.Second, time.Millisecond, "calls still hold capacity: %+v, governor %+v, scopes %+v", s.Stats().ServerCalls, s.Stats().Governor, s.Stats().Admission.Scopes)
	st := s.Stats()
	for _, sc := range st.Admission.Scopes {
		if strings.HasSuffix(sc.Name, "/concurrency") { // rate scopes count units taken, not held
			assert.Zero(t, sc.InUse, "scope %s still holds units", sc.Name)
		}
		assert.Zero(t, sc.Waiters, "scope %s still has waiters", sc.Name)
	}
	assert.Zero(t, st.Admission.DoubleReleases)
}

func TestUnaryCalls(t *testing.T) {
	s := startServer(t, server.Options{})
	c := dialRaw(t, s.addr)

	r := c.call("echo", "Say", []byte("hello"))
	require.Nil(t, r.err)
	assert.Equal(t, "hello", string(r.body))

	r = c.call("echo", "Say", nil)
	require.Nil(t, r.err)
	assert.Empty(t, r.body)

	r = c.call("typed", "Echo", []byte(`{"text":"ada"}`))
	require.Nil(t, r.err)
	assert.JSONEq(t, `{"text":"ada","n":3}`, string(r.body))

	r = c.call("typed", "Echo", []byte(`{"text":`))
	require.NotNil(t, r.err)
	assert.Equal(t, protocol.CodeInvalidArgument, r.err.Code)

	r = c.call("echo", "Fail", nil)
	require.NotNil(t, r.err)
	assert.Equal(t, protocol.CodeNotFound, r.err.Code)
	assert.Equal(t, "no such thing", r.err.Message)

	r = c.call("echo", "Plain", nil)
	require.NotNil(t, r.err)
	assert.Equal(t, protocol.CodeUnknown, r.err.Code)
	assert.Equal(t, "plain failure", r.err.Message)

	r = c.call("echo", "Panic", nil)
	require.NotNil(t, r.err)
	assert.Equal(t, protocol.CodeInternal, r.err.Code)
	assert.Contains(t, r.err.Message, "boom")

	// The connection is still usable after every kind of failure.
	r = c.call("echo", "Say", []byte("still here"))
	require.Nil(t, r.err)
	assert.Equal(t, "still here", string(r.body))
	assert.Equal(t, uint64(1), s.Stats().HandlerPanics)
	requireLedgerZero(t, s)
}

// TestUnknownMethodAndCompressedBody: an unknown method is Unimplemented,
// and a compressed body that is not what it says (codec id 1 is zstd
// here: three bytes are no zstd frame) fails its call with
// InvalidArgument; the connection stays usable. (Before the codecs, every
// compressed body was Unimplemented.)
func TestUnknownMethodAndCompressedBody(t *testing.T) {
	s := startServer(t, server.Options{})
	c := dialRaw(t, s.addr)
	c.nextID++
	frame, err := protocol.AppendRequest(nil, c.nextID, &protocol.Request{Service: 99, Method: 0})
	require.NoError(t, err)
	c.write(frame)
	r := c.next()
	require.NotNil(t, r.err)
	assert.Equal(t, protocol.CodeUnimplemented, r.err.Code)

	id := c.send("echo", "Say", []byte{1, 2, 3}, func(r *protocol.Request) {
		r.Compressed, r.CodecID, r.OriginalLength = true, 1, 10
	})
	r = c.next()
	assert.Equal(t, id, r.id)
	require.NotNil(t, r.err)
	assert.Equal(t, protocol.CodeInvalidArgument, r.err.Code)
	assert.Equal(t, "hi", string(c.call("echo", "Say", []byte("hi")).body))
	requireLedgerZero(t, s)
}

func TestOneWayCalls(t *testing.T) {
	s := startServer(t, server.Options{})
	c := dialRaw(t, s.addr)
	c.send("echo", "OneWay", []byte("fire"), func(r *protocol.Request) { r.OneWay, r.Cancellable = true, false })
	select {
	case got := <-s.mux.oneWay:
		assert.Equal(t, "fire", string(got))
	case <-time.After(10 * time.Second):
		t.Fatal("the one-way handler did not run")
	}
	// No answer to a one-way call: the next frame answers the next call.
	r := c.call("echo", "Say", []byte("after"))
	assert.Equal(t, "after", string(r.body))
	requireLedgerZero(t, s)
}

func TestConcurrentCallsOnOneConnection(t *testing.T) {
	s := startServer(t, server.Options{})
	c := dialRaw(t, s.addr)
	const n = 200
	want := map[uint64]string{}
	for i := range n {
		body := []byte{byte(i), byte(i >> 8)}
		want[c.send("echo", "Say", body, nil)] = string(body)
	}
	for range n {
		r := c.next()
		require.Nil(t, r.err)
		assert.Equal(t, want[r.id], string(r.body), "call %d", r.id)
		delete(want, r.id)
	}
	assert.Empty(t, want)
	requireLedgerZero(t, s)
}

func TestCancelEndsTheHandlersContext(t *testing.T) {
	s := startServer(t, server.Options{})
	c := dialRaw(t, s.addr)
	id := c.send("echo", "Hold", nil, nil)
	<-s.mux.entered
	frame, err := protocol.AppendCancel(nil, id, protocol.CancelCaller)
	require.NoError(t, err)
	c.write(frame)
	assert.ErrorIs(t, <-s.mux.ctxErr, context.Canceled)
	r := c.next()
	assert.Equal(t, id, r.id)
	require.NotNil(t, r.err)
	assert.Equal(t, protocol.CodeCanceled, r.err.Code)
	assert.Equal(t, uint64(1), s.Stats().Cancels)
	requireLedgerZero(t, s)
}

func TestBudgetBecomesTheHandlersDeadline(t *testing.T) {
	s := startServer(t, server.Options{})
	c := dialRaw(t, s.addr)
	id := c.send("echo", "Hold", nil, func(r *protocol.Request) { r.HasBudget, r.Budget = true, 50*time.Millisecond })
	<-s.mux.entered
	assert.ErrorIs(t, <-s.mux.ctxErr, context.DeadlineExceeded)
	r := c.next()
	assert.Equal(t, id, r.id)
	require.NotNil(t, r.err)
	assert.Equal(t, protocol.CodeDeadlineExceeded, r.err.Code)
	requireLedgerZero(t, s)
}

func TestCallInfo(t *testing.T) {
	mux := server.NewMux()
	infos := make(chan server.CallInfo, 2)
	mux.HandleRaw("svc", "Info", func(ctx context.Context, _ []byte) ([]byte, error) {
		info, ok := server.CallInfoFromContext(ctx)
		require.True(t, ok)
		infos <- info
		return nil, nil
	})
	srv, addr := serveMux(t, mux)
	c := dialRaw(t, addr)
	require.Nil(t, c.call("svc", "Info", nil).err)
	assert.Equal(t, server.CallInfo{Method: "svc/Info", ID: 1}, <-infos)
	gen, err := srv.Admission().Enable(kernel.Options{Global: kernel.Rule{Limits: []spi.Spec{concurrency.Spec(4)}}})
	require.NoError(t, err)
	require.Nil(t, c.call("svc", "Info", nil).err)
	assert.Equal(t, server.CallInfo{Method: "svc/Info", ID: 2, Generation: gen}, <-infos)
	_, ok := server.CallInfoFromContext(context.Background())
	assert.False(t, ok)
}

func TestTypedProtobufHandler(t *testing.T) {
	mux := server.NewMux()
	server.Handle(mux, "kv", "Get", protomsg.Codec[wrapperspb.StringValue](), protomsg.Codec[wrapperspb.Int64Value](),
		func(_ context.Context, req *wrapperspb.StringValue) (*wrapperspb.Int64Value, error) {
			return wrapperspb.Int64(int64(len(req.GetValue()))), nil
		})
	_, addr := serveMux(t, mux)
	c := dialRaw(t, addr)
	body, err := proto.Marshal(wrapperspb.String("four"))
	require.NoError(t, err)
	r := c.call("kv", "Get", body)
	require.Nil(t, r.err)
	var got wrapperspb.Int64Value
	require.NoError(t, proto.Unmarshal(r.body, &got))
	assert.Equal(t, int64(4), got.GetValue())

	r = c.call("kv", "Get", []byte{0x0a, 0x09, 'x'}) // a truncated string field
	require.NotNil(t, r.err)
	assert.Equal(t, protocol.CodeInvalidArgument, r.err.Code)
}
