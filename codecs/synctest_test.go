package codecs_test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/sluicerpc/sluice/codecs"
)

// TestCodecsWorkInsideAndOutsideSynctestBubbles: a program's tests may
// compress and decompress inside testing/synctest bubbles and outside
// them, in any order. A zstd Encoder first used in a bubble made its
// channel there, and using it outside was "fatal error: receive on
// synctest channel from outside bubble" (the sluice command's tests
// crashed so); so would a pooled decoder made in a bubble.
func TestCodecsWorkInsideAndOutsideSynctestBubbles(t *testing.T) {
	body := make([]byte, 64<<10)
	for i := range body {
		body[i] = "sluice admission "[i%17]
	}
	run := func() {
		for _, c := range codecs.Builtin() {
			for range 4 {
				z, fits, err := c.Compress(make([]byte, 0, len(body)), body)
				if err != nil || !fits {
					t.Fatalf("%s: Compress: %v %v", c.Name(), fits, err)
				}
				out, err := c.Decompress(context.Background(), nil, z, len(body))
				if err != nil || len(out) != len(body) {
					t.Fatalf("%s: Decompress: %d bytes, %v", c.Name(), len(out), err)
				}
			}
		}
	}
	synctest.Test(t, func(*testing.T) { run() })
	run()
	synctest.Test(t, func(*testing.T) { run() })
}
