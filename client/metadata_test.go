package client_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/client"
	"github.com/sluicerpc/sluice/kernel"
	"github.com/sluicerpc/sluice/limiters/concurrency"
	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/protocol/status"
	"github.com/sluicerpc/sluice/server"
	"github.com/sluicerpc/sluice/spi"
)

// metadataMux serves md/Echo, which answers the request metadata it read
// ("key=value;..."), and md/Set, which sets the response metadata its
// request body names ("key=value;..."), then fails when the body ends in
// ";fail".
func metadataMux(t *testing.T) *server.Mux {
	return echoMux(map[string]server.RawHandler{
		"md/Echo": func(ctx context.Context, _ []byte) ([]byte, error) {
			md := server.RequestMetadata(ctx)
			var b strings.Builder
			for i := range md.Len() {
				k, v := md.At(i)
				fmt.Fprintf(&b, "%s=%s;", k, v)
			}
			if v, ok := md.Get("tenant"); ok {
				fmt.Fprintf(&b, "tenant:%s;", v)
			}
			fmt.Fprintf(&b, "dup:%v", md.Values("dup"))
			return []byte(b.String()), nil
		},
		"md/Set": func(ctx context.Context, req []byte) ([]byte, error) {
			body, fail := strings.CutSuffix(string(req), ";fail")
			for _, kv := range strings.Split(body, ";") {
				k, v, _ := strings.Cut(kv, "=")
				if err := server.AddResponseMetadata(ctx, k, v); err != nil {
					return nil, status.Errorf(protocol.CodeFailedPrecondition, "%v", err)
				}
			}
			if fail {
				return nil, status.New(protocol.CodeNotFound, "no such thing")
			}
			return []byte("ok"), nil
		},
	})
}

// TestRequestMetadataReachesTheHandler: entries, order and repeated keys
// arrive as sent, over TCP; a call without metadata sees none.
func TestRequestMetadataReachesTheHandler(t *testing.T) {
	ts := startServer(t, metadataMux(t), server.Options{})
	c := dial(t, client.Options{}, ts.addr)
	ctx := ctxTimeout(t, 5*time.Second)

	out, err := c.CallRaw(ctx, "md/Echo", nil,
		client.WithMetadata("tenant", "acme", "dup", "1"), client.WithMetadata("dup", "2", "empty", ""))
	require.NoError(t, err)
	assert.Equal(t, "tenant=acme;dup=1;dup=2;empty=;tenant:acme;dup:[1 2]", string(out))

	out, err = c.CallRaw(ctx, "md/Echo", nil)
	require.NoError(t, err)
	assert.Equal(t, "dup:[]", string(out))

	// One-way calls carry it too.
	got := make(chan string, 1)
	mux := echoMux(map[string]server.RawHandler{"md/Note": func(ctx context.Context, _ []byte) ([]byte, error) {
		v, _ := server.RequestMetadata(ctx).Get("tenant")
		got <- v
		return nil, nil
	}})
	ts2 := startServer(t, mux, server.Options{})
	c2 := dial(t, client.Options{}, ts2.addr)
	require.NoError(t, c2.OneWay(ctx, "md/Note", nil, client.WithMetadata("tenant", "b")))
	assert.Equal(t, "b", recv(t, got))
}

// TestResponseMetadataReachesTheCaller: what the handler sets arrives with
// the Response, and with the Error when the handler fails.
func TestResponseMetadataReachesTheCaller(t *testing.T) {
	ts := startServer(t, metadataMux(t), server.Options{})
	c := dial(t, client.Options{}, ts.addr)
	ctx := ctxTimeout(t, 5*time.Second)

	var md protocol.Metadata
	out, err := c.CallRaw(ctx, "md/Set", []byte("a=1;b=two;a=3"), client.ResponseMetadata(&md))
	require.NoError(t, err)
	assert.Equal(t, "ok", string(out))
	assert.Equal(t, []string{"a=1", "b=two", "a=3"}, entriesOf(&md))

	_, err = c.CallRaw(ctx, "md/Set", []byte("why=gone;fail"), client.ResponseMetadata(&md))
	requireCode(t, err, protocol.CodeNotFound)
	assert.Equal(t, []string{"why=gone"}, entriesOf(&md))

	// The next call resets it; a call that does not ask gets none.
	out, err = c.CallRaw(ctx, "echo/Echo", []byte("x"), client.ResponseMetadata(&md))
	require.NoError(t, err)
	assert.Equal(t, "x", string(out))
	assert.Zero(t, md.Len())
	_, err = c.CallRaw(ctx, "md/Set", []byte("a=1"))
	require.NoError(t, err)
}

func entriesOf(md *protocol.Metadata) []string {
	var out []string
	for i := range md.Len() {
		k, v := md.At(i)
		out = append(out, string(k)+"="+string(v))
	}
	return out
}

// TestRequestMetadataLimitsRefusedBeforeSending: each bound is refused by
// the client with InvalidArgument naming it, before anything is written
// (the handler never runs and the connection is unaffected).
func TestRequestMetadataLimitsRefusedBeforeSending(t *testing.T) {
	calls := 0
	var mu sync.Mutex
	mux := echoMux(map[string]server.RawHandler{"md/Count": func(context.Context, []byte) ([]byte, error) {
		mu.Lock()
		calls++
		mu.Unlock()
		return nil, nil
	}})
	lim := protocol.DefaultLimits()
	lim.MaxMetadataBytes = 100
	ts := startServer(t, mux, server.Options{Limits: &lim})
	c := dial(t, client.Options{}, ts.addr)
	ctx := ctxTimeout(t, 5*time.Second)

	many := make([]string, 0, 130)
	for i := range 65 {
		many = append(many, fmt.Sprintf("k%d", i), "")
	}
	tests := []struct {
		name  string
		pairs []string
		msg   string
	}{
		{"odd", []string{"tenant"}, "WithMetadata needs pairs of key and value, got 1 strings"},
		{"invalid key", []string{"Tenant", "a"}, `invalid key "Tenant"`},
		{"empty key", []string{"", "a"}, `invalid key ""`},
		{"long key", []string{strings.Repeat("k", 129), ""}, "is 129 bytes, the limit is 128"},
		{"count", many, "65 entries, the limit is 64 (MaxMetadataEntries)"},
		{"value size", []string{"a", "b", "blob", strings.Repeat("v", 97)}, `request metadata: 108 bytes encoded (the largest value, of "blob", is 97 bytes), the server's limit is 100 bytes (MaxMetadataBytes)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := c.CallRaw(ctx, "md/Count", nil, client.WithMetadata(tt.pairs...))
			st := requireCode(t, err, protocol.CodeInvalidArgument)
			assert.Contains(t, st.Message, tt.msg)
			err = c.OneWay(ctx, "md/Count", nil, client.WithMetadata(tt.pairs...))
			requireCode(t, err, protocol.CodeInvalidArgument)
		})
	}
	// Exactly at the bound is fine: 1 + 2 + 97 bytes.
	_, err := c.CallRaw(ctx, "md/Count", nil, client.WithMetadata("a", strings.Repeat("v", 96)))
	require.NoError(t, err)
	mu.Lock()
	assert.Equal(t, 1, calls, "no refused call reached the server")
	mu.Unlock()
	st := ts.srv.Stats()
	assert.Zero(t, st.ProtocolViolations)
	assert.Zero(t, st.Refusals["metadata_limit"])
}

// TestServerRefusesOversizeMetadataPerCall: a server whose entry bound is
// lower than the client's (the client cannot know it: the handshake does
// not announce it) refuses the call with InvalidArgument; the connection
// keeps serving.
func TestServerRefusesOversizeMetadataPerCall(t *testing.T) {
	lim := protocol.DefaultLimits()
	lim.MaxMetadataEntries = 2
	ts := startServer(t, metadataMux(t), server.Options{Limits: &lim})
	c := dial(t, client.Options{}, ts.addr)
	ctx := ctxTimeout(t, 5*time.Second)

	_, err := c.CallRaw(ctx, "md/Echo", nil, client.WithMetadata("a", "1", "b", "2", "c", "3"))
	st := requireCode(t, err, protocol.CodeInvalidArgument)
	assert.Equal(t, "request metadata refused: 3 entries, the server's limit is 2", st.Message)

	out, err := c.CallRaw(ctx, "md/Echo", nil, client.WithMetadata("tenant", "x"))
	require.NoError(t, err, "the connection survives")
	assert.Equal(t, "tenant=x;tenant:x;dup:[]", string(out))
	stats := ts.srv.Stats()
	assert.Equal(t, uint64(1), stats.Refusals["metadata_limit"])
	assert.Zero(t, stats.ProtocolViolations)
	assert.Equal(t, 1, stats.Connections)
}

// TestResponseMetadataLimits: the handler is refused, with an error naming
// the bound, an entry over the protocol's default limits (which every
// client accepts); what it set before is still sent.
func TestResponseMetadataLimits(t *testing.T) {
	var errs []error
	mux := echoMux(map[string]server.RawHandler{"md/Big": func(ctx context.Context, req []byte) ([]byte, error) {
		errs = errs[:0]
		switch string(req) {
		case "count":
			for i := range 65 {
				if err := server.AddResponseMetadata(ctx, fmt.Sprintf("k%d", i), ""); err != nil {
					errs = append(errs, err)
				}
			}
		case "bytes":
			errs = append(errs, server.AddResponseMetadata(ctx, "small", "v"))
			errs = append(errs, server.AddResponseMetadata(ctx, "blob", strings.Repeat("v", 8192)))
		case "key":
			errs = append(errs, server.AddResponseMetadata(ctx, "Bad Key", "v"))
		}
		return nil, nil
	}})
	ts := startServer(t, mux, server.Options{})
	c := dial(t, client.Options{}, ts.addr)
	ctx := ctxTimeout(t, 5*time.Second)
	var md protocol.Metadata

	_, err := c.CallRaw(ctx, "md/Big", []byte("count"), client.ResponseMetadata(&md))
	require.NoError(t, err)
	assert.Equal(t, 64, md.Len())
	require.Len(t, errs, 1)
	assert.ErrorIs(t, errs[0], server.ErrMetadata)
	assert.ErrorContains(t, errs[0], `"k64" would be entry 65; the limit is 64 entries`)

	_, err = c.CallRaw(ctx, "md/Big", []byte("bytes"), client.ResponseMetadata(&md))
	require.NoError(t, err)
	assert.Equal(t, []string{"small=v"}, entriesOf(&md))
	require.NoError(t, errs[0])
	assert.ErrorContains(t, errs[1], `"blob" (a 8192-byte value) would make the metadata 8208 bytes; the limit is 8192 bytes`)

	_, err = c.CallRaw(ctx, "md/Big", []byte("key"), client.ResponseMetadata(&md))
	require.NoError(t, err)
	assert.ErrorContains(t, errs[0], `invalid key "Bad Key"`)
	assert.Zero(t, md.Len())

	// Outside a handler.
	assert.ErrorIs(t, server.AddResponseMetadata(context.Background(), "a", "b"), server.ErrMetadata)
	assert.Zero(t, server.RequestMetadata(context.Background()).Len())
}

// TestRequestMetadataViewEndsWithTheHandler: a view kept past its handler
// panics instead of reading another call's bytes.
func TestRequestMetadataViewEndsWithTheHandler(t *testing.T) {
	kept := make(chan server.Metadata, 1)
	mux := echoMux(map[string]server.RawHandler{"md/Keep": func(ctx context.Context, _ []byte) ([]byte, error) {
		md := server.RequestMetadata(ctx)
		v, _ := md.Get("tenant")
		kept <- md
		return []byte(v), nil
	}})
	ts := startServer(t, mux, server.Options{})
	c := dial(t, client.Options{}, ts.addr)
	out, err := c.CallRaw(ctxTimeout(t, 5*time.Second), "md/Keep", nil, client.WithMetadata("tenant", "a"))
	require.NoError(t, err)
	assert.Equal(t, "a", string(out))
	md := <-kept
	require.Eventually(t, func() (ended bool) {
		defer func() { ended = recover() != nil }()
		md.Len()
		return false
	}, 5*time.Second, time.Millisecond, "the view ends once the call is answered")
	assert.PanicsWithValue(t, "server: request Metadata used after its handler returned (copy what you keep: Get, Values and At return copies)", func() { md.Get("tenant") })
}

// TestPartitionByTenantOverTCP: admission partitioned by the "tenant"
// metadata, concurrency 2 per tenant. Tenant A holding its two slots is
// refused (reason concurrency, at its partition) while tenant B, on
// another client and on A's own connection, still gets in.
func TestPartitionByTenantOverTCP(t *testing.T) {
	b := newBlocker(8)
	opts := kernel.Options{
		Partition: &kernel.PartitionPolicy{
			Selector: kernel.Selector{Name: "tenant", Version: 1, Key: func(f kernel.Facts) (string, bool) {
				if f.Metadata == nil {
					return "", false
				}
				return f.Metadata.Get("tenant")
			}},
			MaxPartitions: 16,
			IdleTimeout:   time.Minute,
			Rule:          kernel.Rule{Limits: []spi.Spec{concurrency.Spec(2)}},
		},
	}
	ts := startServer(t, echoMux(map[string]server.RawHandler{"svc/Hold": b.handle}), server.Options{Admission: &opts})
	a := dial(t, client.Options{MaxAttempts: 1}, ts.addr)
	bc := dial(t, client.Options{MaxAttempts: 1}, ts.addr)
	ctx := ctxTimeout(t, 10*time.Second)

	held := make(chan error, 4)
	hold := func(c *client.Client, tenant string) {
		go func() {
			_, err := c.CallRaw(ctx, "svc/Hold", nil, client.WithMetadata("tenant", tenant))
			held <- err
		}()
		recv(t, b.started)
	}
	hold(a, "a")
	hold(a, "a")

	// Tenant A is full.
	_, err := a.CallRaw(ctx, "svc/Hold", nil, client.WithMetadata("tenant", "a"))
	st := requireCode(t, err, protocol.CodeResourceExhausted)
	assert.Equal(t, protocol.ReasonConcurrency, st.Reason)
	assert.Contains(t, st.Message, "partition")

	// Tenant B is not, from either client.
	hold(bc, "b")
	hold(a, "b")
	_, err = bc.CallRaw(ctx, "svc/Hold", nil, client.WithMetadata("tenant", "b"))
	requireCode(t, err, protocol.CodeResourceExhausted)

	close(b.release)
	for range 4 {
		require.NoError(t, recv(t, held))
	}
	// Released: tenant A gets in again.
	_, err = a.CallRaw(ctx, "svc/Hold", nil, client.WithMetadata("tenant", "a"))
	require.NoError(t, err)
	stats := ts.srv.Stats()
	assert.Equal(t, uint64(2), stats.Refusals["concurrency"])
}

// BenchmarkCallRawMetadata is BenchmarkCallRaw/serial with request
// metadata (two entries, read by the handler) and with the response
// metadata captured; "none" is the same call without metadata.
func BenchmarkCallRawMetadata(b *testing.B) {
	mux := echoMux(map[string]server.RawHandler{
		"md/Read": func(ctx context.Context, req []byte) ([]byte, error) {
			if _, ok := server.RequestMetadata(ctx).Get("tenant"); ok {
				if err := server.AddResponseMetadata(ctx, "served-by", "s1"); err != nil {
					return nil, err
				}
			}
			return req, nil
		},
	})
	ts := startServer(b, mux, server.Options{})
	c := dial(b, client.Options{}, ts.addr)
	req := []byte{1}
	ctx := context.Background()
	var md protocol.Metadata
	for _, tc := range []struct {
		name string
		opts []client.CallOption
	}{
		{"none", nil},
		{"request", []client.CallOption{client.WithMetadata("tenant", "acme", "trace-id", "4bf92f3577b34da6a3ce929d0e0e4736")}},
		{"request-response", []client.CallOption{client.WithMetadata("tenant", "acme"), client.ResponseMetadata(&md)}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.CallRaw(ctx, "md/Read", req, tc.opts...); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
