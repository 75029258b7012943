//go:build !race

package codecs_test

import (
	"runtime"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/codecs"
)

// TestZstdEncodersHoldLittleAndOnlyWhileUsed: after concurrent
// compressions of 600 KiB bodies, the zstd encoders hold a few megabytes
// each while pooled, and nothing once the collector has reclaimed them
// (with the library's defaults, one Encoder kept 18 MiB per P forever).
func TestZstdEncodersHoldLittleAndOnlyWhileUsed(t *testing.T) {
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
	for range 8 {
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
	held := live() - base // two collections: the pool's victims are gone
	t.Logf("held after the collector ran: %d KiB", held>>10)
	require.Less(t, held, int64(4<<20), "zstd encoders are still held after two collections")
}
