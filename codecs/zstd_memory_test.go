//go:build !race

package codecs_test

import (
	"runtime"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/codecs"
)

// TestZstdEncodersHoldLittle: after concurrent compressions of 600 KiB
// bodies, the zstd encoders (GOMAXPROCS of them, kept for the process's
// life) hold at most 3 MiB each; with the library's defaults each held
// 18 MiB.
func TestZstdEncodersHoldLittle(t *testing.T) {
	live := func() int64 {
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return int64(m.HeapAlloc)
	}
	body := make([]byte, 600<<10)
	for i := range body {
		body[i] = "sluice admission "[i%17] ^ byte(i>>9)
	}
	base := live()
	var wg sync.WaitGroup
	for range 4 * runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			dst := make([]byte, 0, len(body))
			for range 5 {
				out, fits, err := codecs.Zstd().Compress(dst[:0], body)
				if err != nil || !fits || len(out) == 0 {
					t.Errorf("Compress: %d bytes, fits %v, %v", len(out), fits, err)
				}
			}
		})
	}
	wg.Wait()
	held := live() - base
	per := held / int64(runtime.GOMAXPROCS(0))
	t.Logf("held after the compressions: %d KiB, %d KiB per P", held>>10, per>>10)
	require.Less(t, per, int64(3<<20), "zstd encoders hold more than 3 MiB each")
}
