package codecs

import "github.com/sluicerpc/sluice/spi"

// Builtin returns the compressing built-in codecs in sluice's order of
// preference, the order a client offers them in the handshake (the server
// takes the first it supports). The server pays the decode of every
// request, so the order weighs decode cost against ratio (json-like
// bodies, 64 KiB to 1 MiB, on a 2-core amd64 runner):
//   - zstd: about a tenth of the size, decoding at 0.6-0.7 GB/s;
//   - s2: about a fifth, twice as large as zstd's, but decoding at twice
//     its speed (1.2-1.4 GB/s) and encoding the fastest;
//   - gzip: the ratio of zstd, decoding no faster, encoding slower: it is
//     here for peers that have nothing better;
//   - br: the best ratio on text but the slowest to decode (0.2-0.25
//     GB/s), and its decoder allocates a ring buffer per stream.
//
// Identity is not offered: an uncompressed body needs no profile, and the
// compression policy sends a body uncompressed whenever compressing does
// not pay. Each call returns a new slice; the codecs are shared and safe
// for concurrent use.
func Builtin() []spi.Codec {
	return []spi.Codec{Zstd(), S2(), Gzip(), Brotli()}
}

// ByName returns the built-in codec with wire profile name (identity
// included), and false for any other name.
func ByName(name string) (spi.Codec, bool) {
	switch name {
	case "identity":
		return Identity(), true
	case "zstd":
		return Zstd(), true
	case "s2":
		return S2(), true
	case "gzip":
		return Gzip(), true
	case "br":
		return Brotli(), true
	}
	return nil, false
}
