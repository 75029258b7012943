//go:build !race

package codecs_test

import (
	"context"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/codecs"
)

// TestADeclaredSizeIsNotTrustedUpFront: a small body whose header
// declares a large decoded size (a zstd frame's content size, gzip's
// ISIZE) but that is cut short costs about what it decodes, not what it
// declares: before, the output was grown to the declared size (up to the
// limit) before the first byte was decoded.
func TestADeclaredSizeIsNotTrustedUpFront(t *testing.T) {
	const limit = 16 << 20
	for _, name := range []string{"zstd", "gzip"} {
		c, _ := codecs.ByName(name)
		var body []byte
		switch name {
		case "zstd":
			// A frame whose header declares a content size of 16 MiB
			// (a 1 MiB window), holding one compressed block of 4 KiB
			// of x: it decodes that, then fails the size check.
			z, fits, err := c.Compress(make([]byte, 0, 1<<10), bytesOf('x', 4<<10))
			require.NoError(t, err)
			require.True(t, fits)
			body = []byte{0x28, 0xb5, 0x2f, 0xfd, 0x80, 10 << 3, 0, 0, 0, 1} // FCS 4 bytes: 16 MiB
			body = append(body, zstdBlocks(t, z)...)
		case "gzip":
			// A small valid member whose ISIZE trailer is forged to
			// 16 MiB: it decodes to 3 bytes, then fails its checks.
			z, fits, err := c.Compress(make([]byte, 0, 64), []byte("abc"))
			require.NoError(t, err)
			require.True(t, fits)
			body = append([]byte(nil), z...)
			n := len(body)
			body[n-4], body[n-3], body[n-2], body[n-1] = 0, 0, 0, 1 // ISIZE = 16 MiB
		}
		decode := func() { _, _ = c.Decompress(context.Background(), nil, body, limit) }
		decode() // warm the pools
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		decode()
		runtime.ReadMemStats(&after)
		allocated := after.TotalAlloc - before.TotalAlloc
		t.Logf("%s: a %d-byte body declaring %d allocated %d bytes", name, len(body), limit, allocated)
		require.Less(t, allocated, uint64(2<<20), "%s: memory followed the declared size", name)
	}
}

func bytesOf(b byte, n int) []byte {
	out := make([]byte, n)
	for i := range out {
		out[i] = b
	}
	return out
}

// zstdBlocks returns the blocks of a one-frame zstd body, without its
// frame header and checksum.
func zstdBlocks(t *testing.T, frame []byte) []byte {
	t.Helper()
	fhd := frame[4]
	if fhd&0x04 != 0 {
		frame = frame[:len(frame)-4]
	}
	n := 5
	if fhd&0x20 == 0 {
		n++ // window descriptor
	}
	n += []int{0, 1, 2, 4}[fhd&3]
	fcs := []int{0, 2, 4, 8}[fhd>>6]
	if fcs == 0 && fhd&0x20 != 0 {
		fcs = 1
	}
	return frame[n+fcs:]
}
