package server_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/codecs"
	"github.com/sluicerpc/sluice/kernel/governor"
	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/server"
	"github.com/sluicerpc/sluice/spi"
)

// instrumented is a server accepting every built-in codec and s2, each
// counted.
type instrumented struct {
	*testServer
	codecs map[string]*countingCodec
}

func startInstrumented(t *testing.T, o server.Options) *instrumented {
	t.Helper()
	in := &instrumented{codecs: map[string]*countingCodec{}}
	var list []spi.Codec
	for _, c := range []spi.Codec{codecs.Zstd(), codecs.Gzip(), codecs.Brotli(), codecs.S2()} {
		cc := counting(c)
		in.codecs[c.Name()] = cc
		list = append(list, cc)
	}
	o.Compression.Codecs = list
	in.testServer = startServer(t, o)
	return in
}

// decodes is the number of decompressions every codec ran.
func (in *instrumented) decodes() (n, bytes int64) {
	for _, c := range in.codecs {
		n += c.decodes.Load()
		bytes += c.decoded.Load()
	}
	return n, bytes
}

// dial connects offering every codec the instrumented server accepts.
func (in *instrumented) dial(t *testing.T) *rawClient {
	t.Helper()
	return dialOffering(t, in.addr, "zstd", "gzip", "br", "s2")
}

func dialOffering(t *testing.T, addr string, offer ...string) *rawClient {
	t.Helper()
	c := dialNoHandshake(t, addr)
	c.handshakeWith(protocol.Handshake{Capabilities: protocol.CapCompression, Codecs: offer})
	return c
}

// TestTheAckListsTheAcceptedPartOfTheOffer: the HandshakeAck lists the
// profiles of the client's offer that the server accepts, in the
// client's order, each once; nothing for a client that offered nothing or
// a server with compression off, where a compressed request fails its call.
func TestTheAckListsTheAcceptedPartOfTheOffer(t *testing.T) {
	s := startInstrumented(t, server.Options{})
	c := dialOffering(t, s.addr, "lz4", "br", "zstd", "br", "identity", "gzip")
	assert.Equal(t, []string{"br", "zstd", "gzip"}, c.ack.Codecs)
	assert.True(t, c.ack.Capabilities.Has(protocol.CapCompression))
	assert.Equal(t, "hi", string(c.call("echo", "Say", []byte("hi")).body), "the per-connection ack is a full ack")

	c = dialRaw(t, s.addr)
	assert.Empty(t, c.ack.Codecs)
	assert.False(t, c.ack.Capabilities.Has(protocol.CapCompression))
	id := c.send("echo", "Say", compress(t, codecs.Zstd(), compressible(4096)), compressed(1, 4096))
	r := c.next()
	require.Equal(t, id, r.id)
	require.NotNil(t, r.err)
	assert.Equal(t, protocol.CodeInvalidArgument, r.err.Code)
	assert.Contains(t, r.err.Message, "negotiated no compression")
	requireLedgerZero(t, s.testServer)

	off := startServer(t, server.Options{Compression: codecs.Config{Off: true}})
	c = dialOffering(t, off.addr, "zstd")
	assert.Empty(t, c.ack.Codecs)
	assert.False(t, c.ack.Capabilities.Has(protocol.CapCompression))
	id = c.send("echo", "Say", compress(t, codecs.Zstd(), compressible(4096)), compressed(1, 4096))
	r = c.next()
	require.Equal(t, id, r.id)
	require.NotNil(t, r.err)
	assert.Equal(t, protocol.CodeInvalidArgument, r.err.Code)
	requireLedgerZero(t, off)
}

// TestAcceptedCompressedRequestsDecodeExactlyOnce: every codec, unary and
// one-way, several sizes: the handler gets the decoded body, and each
// request is decoded exactly once.
func TestAcceptedCompressedRequestsDecodeExactlyOnce(t *testing.T) {
	s := startInstrumented(t, server.Options{})
	c := s.dial(t)
	calls := 0
	for _, name := range []string{"zstd", "gzip", "br", "s2"} {
		for _, n := range []int{1, 1024, 64 << 10, 600 << 10} {
			body := compressible(n)
			z := compress(t, s.codecs[name].Codec, body)
			id := c.send("echo", "Say", z, compressed(c.codecID(name), n))
			r := c.next()
			require.Equal(t, id, r.id)
			require.Nil(t, r.err, "%s %d: %+v", name, n, r.err)
			require.True(t, bytes.Equal(body, c.decodeResponse(r)), "%s %d: the handler got another body", name, n)
			calls++
			require.Equal(t, int64(1), s.codecs[name].decodes.Swap(0), "%s %d: decoded once", name, n)

			c.send("echo", "OneWay", z, func(r *protocol.Request) {
				compressed(c.codecID(name), n)(r)
				r.OneWay, r.Cancellable = true, false
			})
			require.True(t, bytes.Equal(body, <-s.mux.oneWay), "%s %d one-way", name, n)
			require.Equal(t, int64(1), s.codecs[name].decodes.Swap(0), "%s %d one-way: decoded once", name, n)
		}
	}
	st := s.Stats()
	assert.Equal(t, uint64(2*calls), st.Decompressions)
	assert.Zero(t, st.DecodeFailures)
	requireLedgerZero(t, s.testServer)
}

// TestCapacityRefusedCompressedRequestsCostNoDecode: with the call
// capacity full, compressed unary and one-way requests are refused with
// zero decompressions, zero decoded bytes and nothing held.
func TestCapacityRefusedCompressedRequestsCostNoDecode(t *testing.T) {
	s := startInstrumented(t, server.Options{Calls: server.CallCapacity{PerServer: 1}})
	holder := s.dial(t)
	holder.send("echo", "Hold", nil, nil)
	<-s.mux.entered

	c := s.dial(t)
	body := compressible(256 << 10)
	for _, name := range []string{"zstd", "gzip", "br", "s2"} {
		z := compress(t, s.codecs[name].Codec, body)
		id := c.send("echo", "Say", z, compressed(c.codecID(name), len(body)))
		r := c.next()
		require.Equal(t, id, r.id)
		require.NotNil(t, r.err)
		assert.Equal(t, protocol.CodeResourceExhausted, r.err.Code)
		assert.Equal(t, governor.CallCapacityReason, r.err.Reason)
		c.send("echo", "OneWay", z, func(r *protocol.Request) {
			compressed(c.codecID(name), len(body))(r)
			r.OneWay, r.Cancellable = true, false
		})
	}
	// A call after the one-way ones proves they were handled (frames are
	// handled in order on a connection).
	r := c.call("echo", "Say", []byte("x"))
	require.NotNil(t, r.err)
	n, decoded := s.decodes()
	assert.Zero(t, n, "decompressions for refused requests")
	assert.Zero(t, decoded, "decoded bytes for refused requests")
	st := s.Stats()
	assert.Zero(t, st.Decompressions)
	assert.Zero(t, st.DecodedBytes)
	assert.Equal(t, uint64(4), st.OneWayDropped)
	assert.Equal(t, governor.Snapshot{}.Decodes.Used, st.Governor.Decodes.Used)
	assert.Zero(t, st.Governor.Retained.Used)
	assert.Zero(t, st.Governor.Decoded.Used)
	close(s.mux.block)
	require.Nil(t, holder.next().err)
	requireLedgerZero(t, s.testServer)
}

// TestInvalidEnvelopesAreRefusedBeforeReservation: an unknown codec id, a
// declared length above MaxDecodedSize or above the expansion bound are
// answered on their call, before any reservation: with the call capacity
// full they still get their own answer, not call_capacity, and nothing
// is decoded.
func TestInvalidEnvelopesAreRefusedBeforeReservation(t *testing.T) {
	s := startInstrumented(t, server.Options{
		Calls:       server.CallCapacity{PerServer: 1},
		Compression: codecs.Config{MaxDecodedSize: 1 << 20, DecodeRatio: 10, DecodeFloor: 4096},
	})
	holder := s.dial(t)
	holder.send("echo", "Hold", nil, nil)
	<-s.mux.entered
	c := s.dial(t)
	z := compress(t, codecs.Zstd(), compressible(2000))
	for _, tc := range []struct {
		name string
		mod  func(*protocol.Request)
		code protocol.Code
		msg  string
	}{
		{"unknown codec id", compressed(5, 2000), protocol.CodeInvalidArgument, "unknown codec id 5"},
		{"codec id 255", compressed(255, 2000), protocol.CodeInvalidArgument, "unknown codec id 255"},
		{"above MaxDecodedSize", compressed(1, 1<<20+1), protocol.CodeResourceExhausted, "maximum decoded size"},
		{"above the expansion bound", compressed(1, 4097), protocol.CodeResourceExhausted, "expansion bound"},
	} {
		id := c.send("echo", "Say", z, tc.mod)
		r := c.next()
		require.Equal(t, id, r.id, tc.name)
		require.NotNil(t, r.err, tc.name)
		assert.Equal(t, tc.code, r.err.Code, tc.name)
		assert.Contains(t, r.err.Message, tc.msg, tc.name)
		assert.Empty(t, r.err.Reason, "%s: nothing to retry", tc.name)
	}
	n, _ := s.decodes()
	assert.Zero(t, n)
	assert.Equal(t, uint64(4), s.Stats().Refusals["invalid_body"])
	assert.Zero(t, s.Stats().Refusals[governor.CallCapacityReason])
	close(s.mux.block)
	require.Nil(t, holder.next().err)
	requireLedgerZero(t, s.testServer)
}

// TestBadBodiesFailTheirCallOnce: a body that is corrupt, truncated,
// followed by trailing bytes, or that decodes to a length other than the
// one declared fails its call with InvalidArgument after the reservation,
// releases everything once, and leaves the connection usable.
func TestBadBodiesFailTheirCallOnce(t *testing.T) {
	s := startInstrumented(t, server.Options{})
	c := s.dial(t)
	for _, name := range []string{"zstd", "gzip", "br", "s2"} {
		body := compressible(10000)
		z := compress(t, s.codecs[name].Codec, body)
		id := c.codecID(name)
		for _, tc := range []struct {
			what    string
			payload []byte
			decl    int
			msg     string
		}{
			{"truncated", z[:len(z)/2], len(body), ""},
			{"trailing bytes", append(append([]byte(nil), z...), 0, 1, 2), len(body), ""},
			{"garbage", bytes.Repeat([]byte{0xA5}, 300), len(body), ""},
			{"declares more", z, len(body) + 1, "declared"},
			{"declares less", z, len(body) - 1, "inflates past"},
		} {
			before := s.codecs[name].decodes.Load()
			cid := c.send("echo", "Say", tc.payload, compressed(id, tc.decl))
			r := c.next()
			require.Equal(t, cid, r.id)
			require.NotNil(t, r.err, "%s %s", name, tc.what)
			assert.Equal(t, protocol.CodeInvalidArgument, r.err.Code, "%s %s: %s", name, tc.what, r.err.Message)
			assert.Contains(t, r.err.Message, tc.msg, "%s %s", name, tc.what)
			assert.Equal(t, before+1, s.codecs[name].decodes.Load(), "%s %s: decoded once", name, tc.what)
		}
		require.Nil(t, c.call("echo", "Say", []byte("still usable")).err)
	}
	assert.Equal(t, uint64(20), s.Stats().DecodeFailures)
	assert.Equal(t, uint64(20), s.Stats().Refusals["decode_failed"])
	requireLedgerZero(t, s.testServer)
}

// TestBombsAgainstARunningServerStayWithinTheBound sends a 1 GiB bomb in
// every codec's own format: declared honestly it is refused before any
// decode (above MaxDecodedSize); declaring a small length (a lie), it is
// refused as soon as the decode passes it. What the whole process
// allocates meanwhile (cumulative, so garbage counts too: an upper bound
// of the heap's growth) stays within the codec conformance suite's
// allowance for the declared length (six times it plus 8 MiB of decoder
// state), plus four times the frame for its trip through the test's
// writer and the server's reader (a buffer grown by doubling, the call's
// copy): nowhere near the gigabyte.
func TestBombsAgainstARunningServerStayWithinTheBound(t *testing.T) {
	const declared = 4 << 20
	s := startInstrumented(t, server.Options{Compression: codecs.Config{DecodeRatio: -1}})
	c := s.dial(t)
	for _, name := range []string{"zstd", "gzip", "br", "s2"} {
		bomb, err := codecs.Bomb(name, 1<<30)
		require.NoError(t, err)
		require.Less(t, len(bomb), 4<<20, "%s: the bomb must fit a frame", name)

		id := c.send("echo", "Say", bomb, compressed(c.codecID(name), 1<<30))
		r := c.next()
		require.Equal(t, id, r.id)
		require.NotNil(t, r.err)
		assert.Equal(t, protocol.CodeResourceExhausted, r.err.Code, "%s declared honestly", name)

		growth := heapGrowth(func() {
			id := c.send("echo", "Say", bomb, compressed(c.codecID(name), declared))
			r := c.next()
			require.Equal(t, id, r.id)
			require.NotNil(t, r.err)
			assert.Equal(t, protocol.CodeInvalidArgument, r.err.Code, "%s: %s", name, r.err.Message)
		})
		t.Logf("%s: bomb of %d bytes declaring %d: heap +%d", name, len(bomb), declared, growth)
		allowance := int64(6*declared + 8<<20 + 4*len(bomb))
		assert.Less(t, growth, allowance, "%s: the process allocated more than the allowance", name)
	}
	assert.Equal(t, int64(4), func() int64 { n, _ := s.decodes(); return n }(), "each lie decoded once; no honest bomb decoded")
	requireLedgerZero(t, s.testServer)
}

// TestResponsesAreCompressedWithTheClientsFirstAcceptedProfile: the server
// answers with the first profile of the client's offer that it accepts,
// only for bodies the policy finds worth it, never for a client that
// offered nothing, and per-method policies apply.
func TestResponsesAreCompressedWithTheClientsFirstAcceptedProfile(t *testing.T) {
	s := startInstrumented(t, server.Options{Compression: codecs.Config{
		Methods: map[string]codecs.Policy{"echo/OneWay": {MinSize: -1}, "typed/Echo": {MinSize: 1 << 20}},
	}})
	big, small := compressible(64<<10), compressible(1000)
	noise := make([]byte, 8192)
	for i := range noise {
		noise[i] = byte(i*7919 + i>>3*31)
	}
	for _, tc := range []struct {
		offer []string
		want  string
	}{
		{[]string{"unknown", "gzip", "zstd"}, "gzip"},
		{[]string{"br"}, "br"},
		{[]string{"s2", "zstd"}, "s2"},
	} {
		c := dialNoHandshake(t, s.addr)
		c.handshakeWith(protocol.Handshake{Codecs: tc.offer})
		r := c.call("echo", "Say", big)
		require.Nil(t, r.err)
		require.True(t, r.compressed, "offer %v: a 64 KiB compressible response", tc.offer)
		assert.Equal(t, tc.want, c.ack.Codecs[r.codecID-1], "offer %v", tc.offer)
		assert.Equal(t, big, c.decodeResponse(r))
		r = c.call("echo", "Say", small)
		require.Nil(t, r.err)
		assert.False(t, r.compressed, "1000 bytes are below MinSize")
		assert.Equal(t, small, r.body)
		r = c.call("echo", "Say", noise)
		require.Nil(t, r.err)
		assert.Equal(t, noise, c.decodeResponse(r), "an incompressible body is sent as it is, or compressed if it saved enough")
	}
	c := dialRaw(t, s.addr) // offers nothing
	r := c.call("echo", "Say", big)
	require.Nil(t, r.err)
	assert.False(t, r.compressed)
	assert.Equal(t, big, r.body)
	requireLedgerZero(t, s.testServer)
}

// TestCompressedRequestsRoundTripWithMetadata: a compressed request with
// metadata, answered compressed.
func TestCompressedRequestsRoundTripWithMetadata(t *testing.T) {
	s := startInstrumented(t, server.Options{})
	c := dialNoHandshake(t, s.addr)
	c.handshakeWith(protocol.Handshake{Codecs: []string{"zstd"}})
	body := compressible(100 << 10)
	var md protocol.Metadata
	md.Add("k", []byte("v"))
	id := c.send("echo", "Say", compress(t, codecs.Zstd(), body), func(r *protocol.Request) {
		compressed(c.codecID("zstd"), len(body))(r)
		r.Metadata = md
	})
	r := c.next()
	require.Equal(t, id, r.id)
	require.Nil(t, r.err)
	require.True(t, r.compressed)
	assert.Equal(t, body, c.decodeResponse(r))
	requireLedgerZero(t, s.testServer)
}

func TestCompressionOptionsAreValidated(t *testing.T) {
	_, err := server.New(newTestMux(newHandlers()), server.Options{Compression: codecs.Config{Codecs: []spi.Codec{codecs.Identity()}}})
	require.ErrorContains(t, err, "Options.Compression")
	_, err = server.New(newTestMux(newHandlers()), server.Options{Governor: governor.Limits{Decodes: -1}})
	require.ErrorContains(t, err, "Options.Governor")
	require.ErrorContains(t, err, "Decodes")
	s := startServer(t, server.Options{})
	require.Error(t, s.SetGovernorLimits(governor.Limits{DecodedBytes: -5}))
	assert.Equal(t, governor.DefaultLimits(), s.GovernorLimits(), "an invalid change changes nothing")
	require.NoError(t, s.SetGovernorLimits(governor.Limits{Decodes: 3}))
	assert.Equal(t, int64(3), s.GovernorLimits().Decodes)
}

func ExampleServer_SetGovernorLimits() {
	srv, err := server.New(newTestMux(newHandlers()), server.Options{Governor: governor.Limits{Decodes: 4}})
	if err != nil {
		panic(err)
	}
	// Later, under load: fewer decodes at once. Running decodes go on.
	if err := srv.SetGovernorLimits(governor.Limits{Decodes: 2}); err != nil {
		panic(err)
	}
	fmt.Println(srv.GovernorLimits().Decodes)
	// Output: 2
}

var _ = context.Background

// panicky is a codec that panics decoding: a bug met with hostile input.
type panicky struct{ spi.Codec }

func (panicky) Name() string { return "zstd" }
func (panicky) Decompress(context.Context, []byte, []byte, int) ([]byte, error) {
	panic("index out of range in a codec")
}

// TestACodecThatPanicsFailsOnlyItsCall: a codec's panic is the call's
// Internal error, the server and the connection go on, and everything the
// call held comes back.
func TestACodecThatPanicsFailsOnlyItsCall(t *testing.T) {
	s := startServer(t, server.Options{Compression: codecs.Config{Codecs: []spi.Codec{panicky{codecs.Zstd()}}}})
	c := dialOffering(t, s.addr, "zstd")
	body := compressible(5000)
	id := c.send("echo", "Say", compress(t, codecs.Zstd(), body), compressed(1, len(body)))
	r := c.next()
	require.Equal(t, id, r.id)
	require.NotNil(t, r.err)
	assert.Equal(t, protocol.CodeInternal, r.err.Code)
	assert.Contains(t, r.err.Message, "panicked")
	require.Nil(t, c.call("echo", "Say", []byte("still serving")).err)
	assert.Equal(t, uint64(1), s.Stats().DecodeFailures)
	requireLedgerZero(t, s)
}

// TestLimitsMaxDecodedSizeBoundsDecodedBodiesToo: an operator who sets
// Options.Limits.MaxDecodedSize gets that bound, whatever
// Compression.MaxDecodedSize says (the smaller wins).
func TestLimitsMaxDecodedSizeBoundsDecodedBodiesToo(t *testing.T) {
	lim := protocol.DefaultLimits()
	lim.MaxDecodedSize = 8 << 10
	s := startServer(t, server.Options{Limits: &lim, Compression: codecs.Config{MaxDecodedSize: 1 << 20}})
	c := dialOffering(t, s.addr, "zstd")
	body := compressible(10 << 10)
	id := c.send("echo", "Say", compress(t, codecs.Zstd(), body), compressed(1, len(body)))
	r := c.next()
	require.Equal(t, id, r.id)
	require.NotNil(t, r.err)
	assert.Equal(t, protocol.CodeResourceExhausted, r.err.Code)
	assert.Contains(t, r.err.Message, "maximum decoded size 8192")
	small := compressible(8 << 10)
	id = c.send("echo", "Say", compress(t, codecs.Zstd(), small), compressed(1, len(small)))
	r = c.next()
	require.Equal(t, id, r.id)
	require.Nil(t, r.err)
	requireLedgerZero(t, s)
}
