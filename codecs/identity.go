package codecs

import (
	"context"

	"github.com/sluicerpc/sluice/spi"
)

// Identity returns the codec that leaves bodies as they are (wire profile
// "identity"). Its body is the message itself: Decompress refuses one longer
// than limit before copying anything, and never reports corrupt input
// (there is no format to violate).
func Identity() spi.Codec { return identityCodec{} }

type identityCodec struct{}

func (identityCodec) Name() string { return "identity" }

func (identityCodec) Compress(dst, src []byte) ([]byte, bool, error) {
	if cap(dst)-len(dst) < len(src) {
		return dst, false, nil
	}
	return append(dst, src...), true, nil
}

func (identityCodec) Decompress(ctx context.Context, dst, src []byte, limit int) ([]byte, error) {
	limit = max(limit, 0) // the contract says at least 0; a negative limit allows nothing
	base := len(dst)
	if err := ctx.Err(); err != nil {
		return dst, err
	}
	if len(src) > limit {
		return dst, spi.TooLargeError("identity", limit)
	}
	out := grow(dst, len(src))
	for len(src) > 0 {
		n := min(len(src), spi.DecodeQuantum)
		out = append(out, src[:n]...)
		if src = src[n:]; len(src) > 0 {
			if err := ctx.Err(); err != nil {
				return dst[:base], err
			}
		}
	}
	return out, nil
}
