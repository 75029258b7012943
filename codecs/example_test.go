package codecs_test

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/sluicerpc/sluice/codecs"
	"github.com/sluicerpc/sluice/spi"
)

// Compress into a bounded buffer, then decompress under a limit computed by
// spi.DecodeLimit: at most 4 MiB, and at most 100 times the compressed size
// above a 64 KiB floor, so a small frame cannot inflate to the whole limit.
func Example() {
	c := codecs.Zstd()
	msg := []byte(strings.Repeat(`{"user":"ada","ok":true},`, 400)) // 10,000 bytes

	body, fits, err := c.Compress(make([]byte, 0, len(msg)), msg)
	if err != nil || !fits {
		fmt.Println("send uncompressed")
		return
	}
	fmt.Println("compressed smaller:", len(body) < len(msg))

	limit := spi.DecodeLimit(4<<20, 64<<10, 100, len(body))
	out, err := c.Decompress(context.Background(), nil, body, limit)
	fmt.Println(len(out), err)

	// The same body under a limit one byte short is refused, not truncated.
	_, err = c.Decompress(context.Background(), nil, body, len(msg)-1)
	fmt.Println(errors.Is(err, spi.ErrDecodedTooLarge))

	// A 64 MiB bomb (about 7 KB) gets a limit of 700 KB from the ratio
	// guard, and is refused as soon as its output passes it.
	bomb, _ := codecs.Bomb("zstd", 64<<20)
	limit = spi.DecodeLimit(4<<20, 64<<10, 100, len(bomb))
	_, err = c.Decompress(context.Background(), nil, bomb, limit)
	fmt.Println(limit < 1<<20, errors.Is(err, spi.ErrDecodedTooLarge))
	// Output:
	// compressed smaller: true
	// 10000 <nil>
	// true
	// true true
}
