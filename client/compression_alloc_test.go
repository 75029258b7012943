//go:build !race

// The race detector makes sync.Pool drop items at random: allocation
// counts are only meaningful without it.

package client_test

import (
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/sluicerpc/sluice/client"
	"github.com/sluicerpc/sluice/codecs"
	"github.com/sluicerpc/sluice/spi"
)

// perCall is what one call allocates, as testing.AllocsPerRun counts
// (whole allocations per run), and in bytes on average, over runs calls
// after a warm-up.
func perCall(t *testing.T, runs int, call func()) (allocs, bytes float64) {
	t.Helper()
	allocs = testing.AllocsPerRun(runs, call)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range runs {
		call()
	}
	runtime.ReadMemStats(&after)
	return allocs, float64(after.TotalAlloc-before.TotalAlloc) / float64(runs)
}

// In steady state a compressed call (a 4 KiB request compressed, a 4 KiB
// response decoded) allocates no more often than the same call
// uncompressed: the compression buffer is the pooled call's, the encoder
// and decoder states are the codecs' pooled ones, and the decoded response
// is one allocation of its exact size, as the uncompressed copy is (brotli's
// decoder adds the library's own few allocations, which the codecs module
// bounds at 5: TestSteadyStateDecompressAllocates). A call
// whose body is not worth compressing, against a server with 4 MiB frames,
// allocates no compression buffer at all (it once allocated one of the
// frame's size per call). The bytes a compressed call allocates are only
// logged: they include the codecs' pooled encoder and decoder states,
// allocated again whenever a GC has emptied their pools (gzip's deflater
// is hundreds of KiB), which is the codecs' cost, not the client's.
func TestACompressedCallAllocatesLikeAnUncompressedOne(t *testing.T) {
	libraryAllocs := map[string]float64{"br": 5}
	body := compressible(4 << 10)
	for _, c := range []spi.Codec{codecs.Zstd(), codecs.Gzip(), codecs.Brotli(), codecs.S2()} {
		t.Run(c.Name(), func(t *testing.T) {
			p := compressedPeer(t, c.Name(), body)
			cl := dial(t, client.Options{Compression: codecs.Config{Codecs: []spi.Codec{c}}}, p.addr)
			ctx := ctxTimeout(t, time.Minute)
			call := func(method string, req []byte, opts ...client.CallOption) func() {
				return func() {
					resp, err := cl.CallRaw(ctx, method, req, opts...)
					if err != nil || len(resp) != len(body) {
						t.Fatalf("%s: %d bytes, %v", method, len(resp), err)
					}
				}
			}
			plainAllocs, plainBytes := perCall(t, 200, call("svc/N", body, client.NoCompression()))
			zAllocs, zBytes := perCall(t, 200, call("svc/M", body))
			smallAllocs, smallBytes := perCall(t, 200, call("svc/N", []byte("x")))
			t.Logf("per call: uncompressed %.1f allocs %.0f B; compressed %.1f allocs %.0f B; a 1-byte request %.1f allocs %.0f B",
				plainAllocs, plainBytes, zAllocs, zBytes, smallAllocs, smallBytes)
			// An uncompressed call allocates only its response body,
			// which CallRaw hands to the caller (the peer allocates
			// nothing once its buffers have grown).
			assert.LessOrEqual(t, plainAllocs, 1.0, "allocations of an uncompressed call")
			assert.LessOrEqual(t, plainBytes, float64(len(body)+1024), "bytes allocated by an uncompressed call")
			assert.LessOrEqual(t, zAllocs, plainAllocs+libraryAllocs[c.Name()], "allocations of a compressed call")
			assert.LessOrEqual(t, smallBytes, float64(len(body)+1024), "bytes allocated by a call not worth compressing")
		})
	}
}
