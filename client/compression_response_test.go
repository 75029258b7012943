package client_test

import (
	"context"
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/client"
	"github.com/sluicerpc/sluice/codecs"
	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/protocol/status"
	"github.com/sluicerpc/sluice/spi"
)

// allCodecs are the four compressing built-ins, offered in this order by
// the response tests.
func allCodecs() []spi.Codec {
	return []spi.Codec{codecs.Zstd(), codecs.Gzip(), codecs.Brotli(), codecs.S2()}
}

// compress is src compressed with the built-in codec name, in full.
func compress(t testing.TB, name string, src []byte) []byte {
	t.Helper()
	c, ok := codecs.ByName(name)
	require.True(t, ok, name)
	out, fits, err := c.Compress(make([]byte, 0, len(src)+1024), src)
	require.NoError(t, err)
	require.True(t, fits)
	return out
}

// A compressed response is decoded with the profile its codec id names in
// the server's ack (whatever the client's own order), whichever built-in it
// is.
func TestCompressedResponsesAreDecoded(t *testing.T) {
	accept := []string{"br", "s2", "gzip", "zstd"} // not the client's order
	want := compressible(64 << 10)
	wire := map[string][]byte{}
	for _, name := range accept {
		wire[name] = compress(t, name, want)
	}
	p := startCodecPeer(t, peerConfig{accept: accept, respond: func(dst []byte, _ int, id uint64, req *protocol.Request) []byte {
		for i, name := range accept {
			if string(req.Body) == name {
				return appendCompressed(dst, id, uint8(i+1), uint32(len(want)), wire[name])
			}
		}
		return echo(dst, id, req)
	}})
	c := dial(t, client.Options{Compression: codecs.Config{Codecs: allCodecs()}}, p.addr)
	for _, name := range accept {
		t.Run(name, func(t *testing.T) {
			got, err := c.CallRaw(ctxTimeout(t, 5*time.Second), "svc/M", []byte(name))
			require.NoError(t, err)
			assert.Equal(t, want, got)
		})
	}
	assert.Equal(t, 1, p.connections())
}

// A hostile server's bomb, 1 GiB of zeros in every built-in codec's format
// declaring the most the client's bounds let it declare, fails its call
// with DataLoss (spi.ErrDecodedTooLarge) as soon as it passes the declared
// length: what the call allocates is that length plus the bomb's own bytes
// (read once into the reader's buffer, copied once to the call) plus a
// small constant, never the gigabyte; and the connection carries the next
// call. The measure is runtime.MemStats.TotalAlloc over the call, which
// counts every allocation, garbage included, so it bounds the heap's
// growth; it is taken on the second bomb, with the collector off and on one
// P, once the codecs' pools hold their decoder state (a ring buffer, a window: the codec conformance suite
// measures that cost cold, see docs/codecs.md). Under the race detector,
// whose sync.Pool drops items at random, the cold decoder state is allowed
// too.
func TestABombResponseIsRefusedWithinItsDeclaredLength(t *testing.T) {
	const bombSize = 1 << 30
	cfg := codecs.Config{Codecs: allCodecs(), MaxDecodedSize: 4 << 20}
	bounds, err := cfg.Resolve()
	require.NoError(t, err)
	accept := []string{"zstd", "gzip", "br", "s2"}
	type bomb struct {
		data     []byte
		declared int
	}
	bombs := map[string]bomb{}
	for _, name := range accept {
		b, err := codecs.Bomb(name, bombSize)
		require.NoError(t, err)
		bombs[name] = bomb{b, bounds.DecodeLimit(len(b))}
	}
	p := startCodecPeer(t, peerConfig{accept: accept, maxFrame: 4 << 20, noRecord: true,
		respond: func(dst []byte, _ int, id uint64, req *protocol.Request) []byte {
			for i, name := range accept {
				if string(req.Body) == name {
					b := bombs[name]
					return appendCompressed(dst, id, uint8(i+1), uint32(b.declared), b.data)
				}
			}
			return echo(dst, id, req)
		}})
	c := dial(t, client.Options{Compression: cfg}, p.addr)
	for _, name := range accept {
		t.Run(name, func(t *testing.T) {
			b := bombs[name]
			call := func() error {
				_, err := c.CallRaw(ctxTimeout(t, 20*time.Second), "svc/M", []byte(name))
				return err
			}
			// The first call warms the pools; both run with the
			// collector off, since a collection empties them, and on one
			// P, since a pool's private item is only found on its own P
			// (as testing.AllocsPerRun does).
			runtime.GC()
			defer debug.SetGCPercent(debug.SetGCPercent(-1))
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
			require.Error(t, call())
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			err := call()
			runtime.ReadMemStats(&after)
			debug.SetGCPercent(100)
			allocated := int(after.TotalAlloc - before.TotalAlloc)

			requireCode(t, err, protocol.CodeDataLoss)
			assert.ErrorIs(t, err, spi.ErrDecodedTooLarge)
			slack := 1 << 20
			if raceEnabled {
				// The pools may have dropped the decoder's state (brotli's
				// ring, grown to 4 MiB, zstd's window) and the output
				// quanta: the cold cost, measured up to 9.3 MB beyond the
				// declared length and the bomb's copies for br. Allowed:
				// brotli's largest ring (16 MiB, docs/codecs.md), a gross
				// bound still far below the gigabyte; the tight bound is
				// the one without the race detector.
				slack += 16 << 20
			}
			bound := b.declared + 2*len(b.data) + slack
			t.Logf("%s bomb: %d bytes declaring %d, decoding to %d; the call allocated %d bytes (bound %d): %v", name, len(b.data), b.declared, bombSize, allocated, bound, err)
			assert.LessOrEqual(t, allocated, bound, "bytes allocated by a call refusing the bomb")

			got, err := c.CallRaw(ctxTimeout(t, 5*time.Second), "svc/M", []byte("after"))
			require.NoError(t, err)
			assert.Equal(t, []byte("after"), got)
		})
	}
	assert.Equal(t, 1, p.connections(), "the bombs closed no connection")
}

// Each bad compressed response fails its own call with a precise error and
// leaves the connection usable: a codec id naming no profile the client
// offered and the server accepted, a declared length above the bounds
// (checked before decoding), a body that decodes to less or more than it
// declared, trailing bytes, corrupt bytes.
func TestBadCompressedResponsesFailOnlyTheirCall(t *testing.T) {
	accept := []string{"zstd", "lz4", "gzip"} // lz4: not offered by the client
	text := compressible(1000)
	zeros := make([]byte, 4<<10)
	gz := compress(t, "gzip", text)
	corrupt := append([]byte(nil), gz...)
	corrupt[len(corrupt)/2] ^= 0xff
	for _, tc := range []struct {
		name     string
		cfg      codecs.Config
		codecID  uint8
		declared uint32
		data     []byte
		code     protocol.Code
		cause    error // nil: none required
		message  string
	}{
		{"codec id beyond the ack's list", codecs.Config{}, 9, 1000, gz, protocol.CodeInternal, nil, "accepted only 3 profiles"},
		{"codec id of a profile not offered", codecs.Config{}, 2, 1000, gz, protocol.CodeInternal, nil, `codec id 2 ("lz4"), which this client did not offer`},
		{"a compressed response to a client that offered none", codecs.Config{Off: true}, 3, 1000, gz, protocol.CodeInternal, nil, "offered no codec"},
		{"declared above the default MaxDecodedSize", codecs.Config{}, 3, 64<<20 + 1, gz, protocol.CodeResourceExhausted, spi.ErrDecodedTooLarge, "maximum decoded size 67108864"},
		{"declared above MaxDecodedSize", codecs.Config{MaxDecodedSize: 1 << 20}, 3, 1<<20 + 1, gz, protocol.CodeResourceExhausted, spi.ErrDecodedTooLarge, "maximum decoded size"},
		{"declared above the expansion bound", codecs.Config{}, 1, 1<<20 + 1, compress(t, "zstd", zeros), protocol.CodeResourceExhausted, spi.ErrDecodedTooLarge, "expansion bound"},
		{"decodes to less than declared", codecs.Config{}, 3, 1001, gz, protocol.CodeDataLoss, spi.ErrCorrupt, "decodes to 1000 bytes, not the 1001 it declared"},
		{"decodes to more than declared", codecs.Config{}, 3, 999, gz, protocol.CodeDataLoss, spi.ErrDecodedTooLarge, "more than the 999 bytes it declared"},
		{"trailing bytes", codecs.Config{}, 1, 1000, append(compress(t, "zstd", text), "trailing"...), protocol.CodeDataLoss, spi.ErrCorrupt, "does not decode"},
		{"corrupt bytes", codecs.Config{}, 3, 1000, corrupt, protocol.CodeDataLoss, spi.ErrCorrupt, "does not decode"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := startCodecPeer(t, peerConfig{accept: accept, respond: func(dst []byte, _ int, id uint64, req *protocol.Request) []byte {
				if string(req.Body) == "bad" {
					return appendCompressed(dst, id, tc.codecID, tc.declared, tc.data)
				}
				return echo(dst, id, req)
			}})
			c := dial(t, client.Options{Compression: tc.cfg}, p.addr)
			for range 2 {
				_, err := c.CallRaw(ctxTimeout(t, 5*time.Second), "svc/M", []byte("bad"))
				st := requireCode(t, err, tc.code)
				assert.Contains(t, st.Message, tc.message)
				if tc.cause != nil {
					assert.ErrorIs(t, err, tc.cause)
				}
				got, err := c.CallRaw(ctxTimeout(t, 5*time.Second), "svc/M", []byte("good"))
				require.NoError(t, err, "the next call on the connection")
				assert.Equal(t, []byte("good"), got)
			}
			assert.Equal(t, 1, p.connections(), "the connection stayed up")
		})
	}
}

// cancellingCodec is a built-in codec whose Decompress first cancels the
// call's context: the decode then sees it ended, as when the caller gives
// up while a large response decodes.
type cancellingCodec struct {
	spi.Codec
	cancel context.CancelFunc
}

func (c cancellingCodec) Decompress(ctx context.Context, dst, src []byte, limit int) ([]byte, error) {
	c.cancel()
	return c.Codec.Decompress(ctx, dst, src, limit)
}

// A compressed response is decoded under the call's context: a call whose
// context ends while its response decodes returns the context's error, and
// the connection carries the next call.
func TestAResponseDecodesUnderTheCallsContext(t *testing.T) {
	want := compressible(64 << 10)
	wire := compress(t, "gzip", want)
	p := startCodecPeer(t, peerConfig{accept: []string{"gzip"}, respond: func(dst []byte, _ int, id uint64, _ *protocol.Request) []byte {
		return appendCompressed(dst, id, 1, uint32(len(want)), wire)
	}})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	c := dial(t, client.Options{Compression: codecs.Config{Codecs: []spi.Codec{cancellingCodec{codecs.Gzip(), cancel}}}}, p.addr)
	_, err := c.CallRaw(ctx, "svc/M", nil)
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, protocol.CodeCanceled, status.Code(err))

	// The codec cancels that first context only: the next call decodes.
	got, err := c.CallRaw(ctxTimeout(t, 5*time.Second), "svc/M", nil)
	require.NoError(t, err)
	assert.Equal(t, want, got)
	assert.Equal(t, 1, p.connections())
}
