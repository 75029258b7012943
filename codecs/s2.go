package codecs

import (
	"context"
	"fmt"

	"github.com/klauspost/compress/s2"
	"github.com/sluicerpc/sluice/spi"
)

// S2 returns the S2 codec (wire profile "s2", from
// github.com/klauspost/compress/s2) in the block format, not the framed
// stream format: a body is one S2 block, a varint decoded length followed
// by the encoded data, as s2.Encode writes it. The block format detects
// truncation and trailing bytes (the data must produce exactly the declared
// length), which the stream format cannot (a stream cut at a chunk boundary
// is a valid shorter stream). The declared length is checked against the
// limit before anything is allocated, and the output is allocated once at
// that length. An S2 block decodes in one step (at several GB/s): ctx is
// checked before and after it, not inside it, so a body larger than
// spi.DecodeQuantum may run past a cancellation by the rest of that block.
func S2() spi.Codec { return s2Codec{} }

type s2Codec struct{}

func (s2Codec) Name() string { return "s2" }

func (s2Codec) Compress(dst, src []byte) ([]byte, bool, error) {
	most := s2.MaxEncodedLen(len(src))
	if most < 0 {
		return dst, false, nil // too large for one block
	}
	if spare := cap(dst) - len(dst); most <= spare {
		enc := s2.Encode(dst[len(dst):cap(dst)], src)
		return dst[:len(dst)+len(enc)], true, nil
	}
	return viaScratch(dst, src, most, func(src, buf []byte) []byte { return s2.Encode(buf[:cap(buf)], src) })
}

func (s2Codec) Decompress(ctx context.Context, dst, src []byte, limit int) ([]byte, error) {
	limit = max(limit, 0) // the contract says at least 0; a negative limit allows nothing
	base := len(dst)
	if err := ctx.Err(); err != nil {
		return dst, err
	}
	n, err := s2.DecodedLen(src)
	if err != nil {
		return dst, spi.CorruptError("s2", "reading the block header", err)
	}
	if n > limit {
		return dst, fmt.Errorf("s2: the block declares %d bytes: %w", n, spi.TooLargeError("s2", limit))
	}
	out := grow(dst, n)[:base+n]
	dec, err := s2.Decode(out[base:], src)
	if err != nil {
		return dst[:base], spi.CorruptError("s2", "decoding", err)
	}
	if len(dec) != n || (n > 0 && &dec[0] != &out[base]) {
		return dst[:base], spi.CorruptError("s2", "decoded length differs from the header", nil)
	}
	if n > spi.DecodeQuantum {
		if err := ctx.Err(); err != nil {
			return dst[:base], err
		}
	}
	return out, nil
}
