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

// A Config is what server.Options.Compression and
// client.Options.Compression take: here, zstd then gzip, responses of a
// bulk method compressed from 256 bytes, and bodies bounded to 16 MiB and
// to 64 times their compressed size above a 256 KiB floor.
func ExampleConfig() {
	cfg := codecs.Config{
		Codecs:         []spi.Codec{codecs.Zstd(), codecs.Gzip()},
		Methods:        map[string]codecs.Policy{"export/Dump": {MinSize: 256}},
		MaxDecodedSize: 16 << 20,
		DecodeRatio:    64,
		DecodeFloor:    256 << 10,
	}
	r, err := cfg.Resolve()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(r.Names())
	fmt.Println(r.Policy("export/Dump").MinSize, r.Policy("users/Get").MinSize)
	fmt.Println(r.CheckDeclared(1<<20, 100) != nil, r.CheckDeclared(1<<20, 20000) == nil)

	// Every bad field is reported at once.
	_, err = codecs.Config{Codecs: []spi.Codec{codecs.Identity()}, MaxDecodedSize: -1}.Resolve()
	fmt.Println(err)
	// Output:
	// [zstd gzip]
	// 256 1024
	// true true
	// codecs: Config.Codecs[0]: identity needs no profile (an uncompressed body is sent as it is)
	// codecs: Config.MaxDecodedSize must be in [1, 4294967295], got -1
}

// Policy.Compress gives the codec exactly the room a worthwhile result may
// take: a body that would not save 64 bytes and 5% is sent as it is.
func ExamplePolicy_Compress() {
	p := codecs.DefaultPolicy()
	text := []byte(strings.Repeat("admission ", 200)) // 2000 bytes
	out, ok := p.Compress(codecs.Zstd(), make([]byte, 0, p.Budget(len(text))), text)
	fmt.Println(ok, len(out) < len(text))
	_, ok = p.Compress(codecs.Zstd(), make([]byte, 0, 1024), []byte("short"))
	fmt.Println(ok)
	// Output:
	// true true
	// false
}
