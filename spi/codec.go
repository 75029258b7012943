package spi

import (
	"context"
	"errors"
	"fmt"
)

// Codec compresses and decompresses message bodies for one wire profile
// (the name negotiated in the handshake). Implementations must be safe for
// concurrent use by many goroutines; they usually pool their encoders and
// decoders.
//
// Every byte a Codec decodes comes from the network: Decompress must hold
// memory in proportion to the output it is allowed to produce, never to a
// length the input declares, and must stop as soon as the output would
// pass its limit. Neither method may keep dst or src after it returns.
type Codec interface {
	// Name is the wire profile name: 1 to 64 bytes of lower-case ASCII
	// letters, digits, '-', '_' and '.', for example "gzip", "zstd", "s2",
	// "br". It never changes.
	Name() string

	// Compress writes the compressed form of src into dst's spare
	// capacity, starting at len(dst), and returns dst extended by it. It
	// never grows dst: when the compressed form would not fit in
	// cap(dst)-len(dst) bytes it returns dst unchanged and false (the
	// caller then sends src uncompressed). An error is for a broken codec
	// only; the caller treats it like "would not fit".
	Compress(dst, src []byte) (out []byte, fits bool, err error)

	// Decompress appends the decoded form of src, which must be exactly
	// one complete compressed body, to dst and returns the extended slice.
	// It fails with an error wrapping:
	//   - ErrDecodedTooLarge as soon as the decoded bytes would exceed
	//     limit (it never holds more than about limit bytes of output);
	//   - ErrCorrupt for input that is truncated, corrupt, or followed by
	//     trailing bytes;
	//   - ctx's error when ctx ends; it checks ctx at least once per
	//     DecodeQuantum bytes of output (and before it starts).
	// On error the returned slice is dst[:len(dst)] (the caller's bytes
	// unchanged, what was decoded dropped). limit is at least 0; dst's
	// capacity is only a hint of the expected size.
	Decompress(ctx context.Context, dst, src []byte, limit int) ([]byte, error)
}

// DecodeQuantum is the most output a Codec produces between two checks of
// its context: a cancelled or expired call stops decoding within it.
const DecodeQuantum = 256 << 10

// ErrDecodedTooLarge is wrapped by Decompress when the decoded bytes would
// exceed the limit.
var ErrDecodedTooLarge = errors.New("spi: decoded body exceeds its limit")

// ErrCorrupt is wrapped by Decompress for truncated, corrupt or trailing
// input.
var ErrCorrupt = errors.New("spi: corrupt compressed body")

// CorruptError returns an error wrapping ErrCorrupt that says what the
// codec found, and wrapping cause (the library's error) when not nil.
func CorruptError(codec, what string, cause error) error {
	if cause != nil {
		return fmt.Errorf("%s: %s: %w (%w)", codec, what, ErrCorrupt, cause)
	}
	return fmt.Errorf("%s: %s: %w", codec, what, ErrCorrupt)
}

// TooLargeError returns an error wrapping ErrDecodedTooLarge for a codec
// whose output would pass limit.
func TooLargeError(codec string, limit int) error {
	return fmt.Errorf("%s: more than %d decoded bytes: %w", codec, limit, ErrDecodedTooLarge)
}

// DecodeLimit is the most a body of compressed bytes may decode to: at most
// most, and at most max(floor, compressed x ratio) when ratio is positive,
// so that a large legitimate limit does not let a tiny frame inflate to it
// (the expansion-ratio guard). ratio <= 0 disables the guard.
func DecodeLimit(most, floor, ratio, compressed int) int {
	if ratio <= 0 {
		return most
	}
	bound := floor
	switch {
	case compressed > (int(^uint(0)>>1))/ratio:
		bound = most // the product overflows: only most bounds it
	case compressed > 0:
		bound = max(floor, compressed*ratio)
	}
	return min(most, bound)
}

// ValidCodecName reports whether name is a valid wire profile name.
func ValidCodecName(name string) bool {
	if len(name) == 0 || len(name) > 64 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-', c == '_', c == '.':
		default:
			return false
		}
	}
	return true
}
