package codecs

import "github.com/sluicerpc/sluice/spi"

// Builtin returns the compressing built-in codecs in sluice's order of
// preference, the order a client offers them in the handshake (the server
// takes the first it supports): zstd (the best ratio for its speed), gzip
// (universal, slower), br (the best ratio on text but the slowest to
// decode, and its decoder allocates a ring buffer per message). s2 (the
// fastest) is not offered yet: its block format decodes a body in one
// call, so it cannot observe a cancellation within one DecodeQuantum
// (TestS2FailsOnlyTheCancellationCheck); use S2() explicitly to accept
// that. The server pays the decode of every request,
// so decode cost orders the list. Identity is not offered: an uncompressed
// body needs no profile, and the compression policy sends a body
// uncompressed whenever compressing does not pay. Each call returns a new
// slice; the codecs are shared and safe for concurrent use.
func Builtin() []spi.Codec {
	return []spi.Codec{Zstd(), Gzip(), Brotli()}
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
