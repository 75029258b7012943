package server_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/server"
)

// metadataServer serves md/Read (answers the "tenant" metadata and the
// entry count) and md/Echo (answers its body, reading nothing).
func metadataServer(t testing.TB, o server.Options) string {
	t.Helper()
	mux := server.NewMux()
	mux.HandleRaw("md", "Read", func(ctx context.Context, req []byte) ([]byte, error) {
		md := server.RequestMetadata(ctx)
		v, _ := md.Get("tenant")
		if md.Len() == 0 {
			return req, nil
		}
		return fmt.Appendf(nil, "%s/%d", v, md.Len()), nil
	})
	mux.HandleRaw("md", "Echo", func(_ context.Context, req []byte) ([]byte, error) { return req, nil })
	mux.HandleRaw("md", "Reply", func(ctx context.Context, req []byte) ([]byte, error) {
		if err := server.AddResponseMetadata(ctx, "served-by", "s1"); err != nil {
			return nil, err
		}
		return req, nil
	})
	srv, err := server.New(mux, o)
	require.NoError(t, err)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close(); <-done })
	return l.Addr().String()
}

func withMetadata(pairs ...string) func(*protocol.Request) {
	return func(r *protocol.Request) {
		for i := 0; i < len(pairs); i += 2 {
			if err := r.Metadata.Add(pairs[i], []byte(pairs[i+1])); err != nil {
				panic(err)
			}
		}
	}
}

// TestOversizeRequestMetadataIsACallRefusal: a well-formed block over the
// server's MaxMetadataEntries or MaxMetadataBytes is answered
// InvalidArgument for that call only (the handler does not run, the
// connection keeps serving, a one-way call is dropped silently); a
// malformed block is still a violation that closes the connection.
func TestOversizeRequestMetadataIsACallRefusal(t *testing.T) {
	lim := protocol.DefaultLimits()
	lim.MaxMetadataEntries = 4
	lim.MaxMetadataBytes = 64
	addr := metadataServer(t, server.Options{Limits: &lim})
	c := dialRaw(t, addr)

	id := c.send("md", "Read", nil, withMetadata("a", "", "b", "", "c", "", "d", "", "e", ""))
	r := c.next()
	require.Equal(t, id, r.id)
	require.NotNil(t, r.err)
	assert.Equal(t, protocol.CodeInvalidArgument, r.err.Code)
	assert.Equal(t, "request metadata refused: 5 entries, the server's limit is 4", r.err.Message)

	id = c.send("md", "Read", nil, withMetadata("tenant", strings.Repeat("v", 60)))
	r = c.next()
	require.Equal(t, id, r.id)
	require.NotNil(t, r.err)
	assert.Equal(t, "request metadata refused: 69 bytes encoded, the server's limit is 64", r.err.Message)

	// A one-way call over the limits is dropped; the next call is served.
	c.send("md", "Read", nil, func(r *protocol.Request) {
		withMetadata("a", "", "b", "", "c", "", "d", "", "e", "")(r)
		r.OneWay, r.Cancellable = true, false
	})
	id = c.send("md", "Read", nil, withMetadata("tenant", "acme"))
	r = c.next()
	require.Equal(t, id, r.id)
	require.Nil(t, r.err)
	assert.Equal(t, "acme/1", string(r.body))

	// Malformed (an upper-case key), even over the limits: a violation.
	head := protocol.AppendHeader(nil, protocol.Header{Type: protocol.FrameRequest, Flags: protocol.FlagHasMetadata | protocol.FlagCancellable, ID: c.nextID + 1, Length: 0})
	si, mi := c.method("md", "Read")
	payload := []byte{byte(si), byte(mi), 5}
	for _, k := range []string{"a", "b", "c", "d", "E"} {
		payload = append(payload, 1, k[0], 0)
	}
	head = protocol.AppendHeader(head[:0], protocol.Header{Type: protocol.FrameRequest, Flags: protocol.FlagHasMetadata | protocol.FlagCancellable, ID: c.nextID + 1, Length: uint32(len(payload))})
	c.write(append(head, payload...))
	f := c.expectClosed()
	require.NotNil(t, f)
	assert.Contains(t, f.Message, "invalid key")
}

// TestResponseMetadataOnTheWire: the Response frame carries the handler's
// metadata (HasMetadata), and a call without it has none.
func TestResponseMetadataOnTheWire(t *testing.T) {
	addr := metadataServer(t, server.Options{})
	c := dialRaw(t, addr)
	c.send("md", "Reply", []byte("x"), nil)
	h, payload := c.read()
	require.Equal(t, protocol.FrameResponse, h.Type)
	assert.True(t, h.Flags.Has(protocol.FlagHasMetadata))
	var resp protocol.Response
	require.NoError(t, protocol.ParseResponse(h, payload, protocol.DefaultLimits(), &resp))
	v, ok := resp.Metadata.Get("served-by")
	assert.True(t, ok)
	assert.Equal(t, "s1", string(v))
	assert.Equal(t, "x", string(resp.Body))

	c.send("md", "Echo", []byte("y"), nil)
	h, _ = c.read()
	assert.False(t, h.Flags.Has(protocol.FlagHasMetadata))
}

// allocsPerPlainCall is what one metadata-free echo call allocates in the
// process (server and raw client) before request metadata was exposed to
// handlers (3 allocs/op in BenchmarkServerUnary at c4e4937 and at main
// bb66da9, which this branch is on).
const allocsPerPlainCall = 3

// TestCallsWithoutMetadataAllocateAsBefore: a call without metadata costs
// what it did before, whether or not its handler reads the (empty)
// metadata.
func TestCallsWithoutMetadataAllocateAsBefore(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("allocation count (the race detector allocates)")
	}
	addr := metadataServer(t, server.Options{})
	c := dialRaw(t, addr)
	measure := func(method string) float64 {
		si, mi := c.method("md", method)
		body := []byte{'x'}
		frame := make([]byte, 0, 64)
		var resp protocol.Response
		lim := protocol.DefaultLimits()
		call := func() {
			c.nextID++
			frame, _ = protocol.AppendRequest(frame[:0], c.nextID, &protocol.Request{Service: si, Method: mi, Body: body})
			c.write(frame)
			h, payload := c.read()
			if h.Type != protocol.FrameResponse {
				t.Fatalf("got %v", h.Type)
			}
			if err := protocol.ParseResponse(h, payload, lim, &resp); err != nil {
				t.Fatal(err)
			}
		}
		for range 100 {
			call()
		}
		return testing.AllocsPerRun(2000, call)
	}
	echo := measure("Echo")
	read := measure("Read")
	t.Logf("allocs per call without metadata: echo %.2f, reading metadata %.2f", echo, read)
	assert.LessOrEqual(t, echo, float64(allocsPerPlainCall))
	assert.LessOrEqual(t, read, float64(allocsPerPlainCall))
}

// BenchmarkServerMetadata: a serial call over TCP loopback from the raw
// client, without metadata (as BenchmarkServerUnary), with two request
// entries read by the handler, and with a response entry.
func BenchmarkServerMetadata(b *testing.B) {
	for _, tc := range []struct {
		name, method string
		md           []string
	}{
		{"none", "Read", nil},
		{"request-read", "Read", []string{"tenant", "acme", "trace-id", "4bf92f3577b34da6a3ce929d0e0e4736"}},
		{"response", "Reply", nil},
	} {
		b.Run(tc.name, func(b *testing.B) {
			addr := metadataServer(b, server.Options{})
			c := dialRaw(b, addr)
			si, mi := c.method("md", tc.method)
			req := protocol.Request{Service: si, Method: mi, Body: []byte{'x'}}
			withMetadata(tc.md...)(&req)
			frame := make([]byte, 0, 128)
			var resp protocol.Response
			lim := protocol.DefaultLimits()
			b.ReportAllocs()
			for b.Loop() {
				c.nextID++
				frame, _ = protocol.AppendRequest(frame[:0], c.nextID, &req)
				c.write(frame)
				h, payload := c.read()
				if h.Type != protocol.FrameResponse {
					b.Fatal(h.Type)
				}
				if err := protocol.ParseResponse(h, payload, lim, &resp); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
