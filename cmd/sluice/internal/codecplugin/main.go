// Command codecplugin serves sluice's built-in codecs (zstd, s2, gzip, br,
// identity, each with codecs.Bomb) and one broken codec, "lossy" (gzip
// bodies, decoded one byte short), over the plug-in bridge, for the tests
// of "sluice conformance --plugin".
package main

import (
	"context"

	"github.com/sluicerpc/sluice/codecs"
	"github.com/sluicerpc/sluice/plugin"
	"github.com/sluicerpc/sluice/spi"
)

// lossy is gzip whose Decompress drops the last decoded byte: the codec
// suite's RoundTrips check must fail it, through the bridge too.
type lossy struct{ spi.Codec }

func (lossy) Name() string { return "lossy" }

func (l lossy) Decompress(ctx context.Context, dst, src []byte, limit int) ([]byte, error) {
	out, err := l.Codec.Decompress(ctx, dst, src, limit)
	if err == nil && len(out) > len(dst) {
		out = out[:len(out)-1]
	}
	return out, err
}

func main() {
	var entries []plugin.CodecEntry
	for _, c := range append(codecs.Builtin(), codecs.Identity()) {
		name := c.Name()
		entries = append(entries, plugin.CodecEntry{Codec: c, Bomb: func(n int64) ([]byte, error) { return codecs.Bomb(name, n) }})
	}
	entries = append(entries, plugin.CodecEntry{Codec: lossy{codecs.Gzip()}, Bomb: func(n int64) ([]byte, error) { return codecs.Bomb("gzip", n) }})
	plugin.Serve(plugin.ServeConfig{Codecs: entries})
}
