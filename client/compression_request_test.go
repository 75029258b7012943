package client_test

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/client"
	"github.com/sluicerpc/sluice/codecs"
	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/spi"
)

// compressible is n bytes of text that every codec compresses well.
func compressible(n int) []byte {
	const line = "the quick brown fox jumps over the lazy dog; "
	return []byte(strings.Repeat(line, n/len(line)+1)[:n])
}

// incompressible is n random bytes (a fixed seed).
func incompressible(n int) []byte {
	r := rand.New(rand.NewPCG(1, 2))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// The handshake offers Options.Compression's profiles, in their order, and
// sets CapCompression exactly when it offers any.
func TestTheHandshakeOffersTheConfiguredProfiles(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  codecs.Config
		want []string
	}{
		{"default", codecs.Config{}, []string{"zstd", "s2", "gzip", "br"}},
		{"custom order", codecs.Config{Codecs: []spi.Codec{codecs.S2(), codecs.Gzip()}}, []string{"s2", "gzip"}},
		{"off", codecs.Config{Off: true}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := startCodecPeer(t, peerConfig{accept: []string{"zstd"}})
			dial(t, client.Options{Compression: tc.cfg}, p.addr)
			hs := p.handshakes()
			require.Len(t, hs, 1)
			assert.Equal(t, tc.want, hs[0].Codecs)
			assert.Equal(t, tc.want != nil, hs[0].Capabilities.Has(protocol.CapCompression), "CapCompression")
		})
	}
}

func TestBadCompressionOptionsAreReportedByDial(t *testing.T) {
	_, err := client.Dial(t.Context(), []string{"127.0.0.1:1"}, client.Options{Compression: codecs.Config{
		Codecs: []spi.Codec{codecs.Gzip(), codecs.Gzip()}, MaxDecodedSize: -1,
	}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "Options.Compression")
	assert.Contains(t, err.Error(), `profile "gzip" listed twice`)
	assert.Contains(t, err.Error(), "MaxDecodedSize")
}

// A request is compressed with the first of the client's own profiles that
// the server's ack lists, and its codec id is that profile's 1-based
// position in the ack; with none in common, or with compression off, it
// goes uncompressed.
func TestRequestsGoWithTheFirstOfOurProfilesTheServerAccepts(t *testing.T) {
	body := compressible(4 << 10)
	for _, tc := range []struct {
		name   string
		cfg    codecs.Config
		accept []string
		id     uint8 // 0: uncompressed
	}{
		{"the server's order does not matter", codecs.Config{}, []string{"br", "gzip"}, 2},
		{"first", codecs.Config{}, []string{"zstd", "gzip", "br"}, 1},
		{"a profile we do not know", codecs.Config{}, []string{"lz4", "br"}, 2},
		{"a profile listed twice", codecs.Config{}, []string{"gzip", "gzip", "zstd"}, 3},
		{"a profile listed twice, first", codecs.Config{}, []string{"gzip", "gzip"}, 1},
		{"our own order", codecs.Config{Codecs: []spi.Codec{codecs.Brotli(), codecs.Zstd()}}, []string{"zstd", "br"}, 2},
		{"none in common", codecs.Config{}, []string{"lz4"}, 0},
		{"the server accepts none", codecs.Config{}, nil, 0},
		{"off", codecs.Config{Off: true}, []string{"zstd"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := startCodecPeer(t, peerConfig{accept: tc.accept})
			c := dial(t, client.Options{Compression: tc.cfg}, p.addr)
			_, err := c.CallRaw(ctxTimeout(t, 5*time.Second), "svc/M", body)
			require.NoError(t, err)
			r := p.last(t)
			assert.Equal(t, tc.id != 0, r.compressed, "compressed")
			assert.Equal(t, tc.id, r.codecID, "codec id")
			if r.compressed {
				assert.Less(t, len(r.body), len(body))
				assert.Equal(t, uint32(len(body)), r.origLen)
			}
			assert.Equal(t, body, r.decoded(t, tc.accept))
		})
	}
}

// The default policy: a body is compressed only from 1024 bytes on, and
// only when that saves at least 64 bytes and 5%. Unary and one-way
// requests alike.
func TestRequestsAreCompressedOnlyWhenThePolicyFindsItWorthIt(t *testing.T) {
	for _, tc := range []struct {
		name string
		body []byte
		want bool
	}{
		{"1023 compressible bytes", compressible(1023), false},
		{"1024 compressible bytes", compressible(1024), true},
		{"4 KiB compressible", compressible(4 << 10), true},
		{"4 KiB incompressible", incompressible(4 << 10), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			accept := []string{"zstd"}
			p := startCodecPeer(t, peerConfig{accept: accept})
			c := dial(t, client.Options{}, p.addr)
			ctx := ctxTimeout(t, 5*time.Second)
			resp, err := c.CallRaw(ctx, "svc/M", tc.body)
			require.NoError(t, err)
			if !tc.want {
				assert.Equal(t, tc.body, resp, "the echo of an uncompressed request")
			}
			require.NoError(t, c.OneWay(ctx, "svc/M", tc.body))
			// The one-way call is followed by a unary one, so that the
			// peer has read it when the unary call returns.
			_, err = c.CallRaw(ctx, "svc/N", nil)
			require.NoError(t, err)
			reqs := p.requests()
			require.Len(t, reqs, 3)
			for i, r := range reqs[:2] {
				assert.Equal(t, i == 1, r.oneWay)
				assert.Equal(t, tc.want, r.compressed, "request %d (one-way %v) compressed", i, r.oneWay)
				assert.Equal(t, tc.body, r.decoded(t, accept))
			}
		})
	}
}

// Options.Compression.Methods overrides Policy per method, and the
// Compression and NoCompression call options override both.
func TestCompressionPolicyPerMethodAndPerCall(t *testing.T) {
	accept := []string{"gzip"}
	p := startCodecPeer(t, peerConfig{accept: accept})
	c := dial(t, client.Options{Compression: codecs.Config{
		Methods: map[string]codecs.Policy{"svc/N": {MinSize: -1}},
	}}, p.addr)
	small, large := compressible(512), compressible(4<<10)
	for _, tc := range []struct {
		name   string
		method string
		body   []byte
		opts   []client.CallOption
		want   bool
	}{
		{"default policy", "svc/M", large, nil, true},
		{"default policy, below MinSize", "svc/M", small, nil, false},
		{"per method: never", "svc/N", large, nil, false},
		{"per call over per method", "svc/N", large, []client.CallOption{client.Compression(codecs.Policy{})}, true},
		{"per call: a lower MinSize", "svc/M", small, []client.CallOption{client.Compression(codecs.Policy{MinSize: 256})}, true},
		{"per call: never", "svc/M", large, []client.CallOption{client.NoCompression()}, false},
		{"the last option wins", "svc/M", large, []client.CallOption{client.NoCompression(), client.Compression(codecs.Policy{})}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.CallRaw(ctxTimeout(t, 5*time.Second), tc.method, tc.body, tc.opts...)
			require.NoError(t, err)
			r := p.last(t)
			assert.Equal(t, tc.want, r.compressed, "compressed")
			assert.Equal(t, tc.body, r.decoded(t, accept))
		})
	}
}

// A Compression option out of range fails its call with InvalidArgument
// before anything is sent.
func TestAnInvalidCompressionOptionFailsBeforeSending(t *testing.T) {
	p := startCodecPeer(t, peerConfig{accept: []string{"gzip"}})
	c := dial(t, client.Options{}, p.addr)
	_, err := c.CallRaw(ctxTimeout(t, 5*time.Second), "svc/M", compressible(4<<10), client.Compression(codecs.Policy{MinSavingPercent: 100}))
	st := requireCode(t, err, protocol.CodeInvalidArgument)
	assert.Contains(t, st.Message, "MinSavingPercent")
	err = c.OneWay(ctxTimeout(t, 5*time.Second), "svc/M", nil, client.Compression(codecs.Policy{MinSaving: -1}))
	requireCode(t, err, protocol.CodeInvalidArgument)
	assert.Empty(t, p.requests())
}

// A body too large for the server's frames goes compressed when its
// compressed form fits one; the compression buffer never exceeds a frame.
func TestACompressedRequestFitsWhereItsBodyWouldNot(t *testing.T) {
	accept := []string{"zstd"}
	p := startCodecPeer(t, peerConfig{accept: accept, maxFrame: protocol.MinFrameSize})
	c := dial(t, client.Options{}, p.addr)
	body := compressible(64 << 10)
	_, err := c.CallRaw(ctxTimeout(t, 5*time.Second), "svc/M", body)
	require.NoError(t, err)
	r := p.last(t)
	require.True(t, r.compressed)
	assert.Equal(t, body, r.decoded(t, accept))

	_, err = c.CallRaw(ctxTimeout(t, 5*time.Second), "svc/M", body, client.NoCompression())
	requireCode(t, err, protocol.CodeResourceExhausted)
	_, err = c.CallRaw(ctxTimeout(t, 5*time.Second), "svc/M", incompressible(64<<10))
	requireCode(t, err, protocol.CodeResourceExhausted)
	assert.Len(t, p.requests(), 1)
}

// A retried attempt sends the request compressed once, with the codec its
// own connection negotiated: never the compressed form compressed again,
// never the previous connection's codec id.
func TestARetriedRequestIsCompressedForItsOwnConnection(t *testing.T) {
	for _, tc := range []struct {
		name   string
		accept [][]string
		ids    []uint8
	}{
		{"the same codec", [][]string{{"gzip"}, {"br", "gzip"}}, []uint8{1, 2}},
		{"another codec", [][]string{{"gzip"}, {"zstd"}}, []uint8{1, 1}},
		{"none, then one", [][]string{nil, {"br"}}, []uint8{0, 1}},
		{"one, then none", [][]string{{"br"}, nil}, []uint8{1, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := startCodecPeer(t, peerConfig{acceptByConn: tc.accept, respond: goAwayOnFirstConn})
			c := dial(t, client.Options{}, p.addr)
			body := compressible(8 << 10)
			resp, err := c.CallRaw(ctxTimeout(t, 5*time.Second), "svc/M", body)
			require.NoError(t, err)
			reqs := p.requests()
			require.Len(t, reqs, 2, "the first attempt and its retry")
			for i, r := range reqs {
				assert.Equal(t, i, r.conn)
				assert.Equal(t, tc.ids[i], r.codecID, "attempt %d's codec id", i)
				assert.Equal(t, body, r.decoded(t, tc.accept[i]), "attempt %d's body", i)
			}
			assert.Equal(t, []byte("ok"), resp)
		})
	}
}

// goAwayOnFirstConn answers the first connection's request with a GoAway
// that leaves it unprocessed (so it is retried on a new connection) and
// every later request with "ok".
func goAwayOnFirstConn(dst []byte, conn int, id uint64, _ *protocol.Request) []byte {
	if conn == 0 {
		out, _ := protocol.AppendGoAway(dst, &protocol.GoAway{LastID: id - 1, Message: "test"})
		return out
	}
	out, _ := protocol.AppendResponse(dst, id, &protocol.Response{Body: []byte("ok")})
	return out
}
