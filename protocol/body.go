package protocol

import "encoding/binary"

// body is the decoded body of a Request or Response.
type body struct {
	data       []byte
	compressed bool
	codec      uint8
	origLen    uint32
}

// parseBody decodes the rest of a Request or Response payload. With
// FlagCompressed it must be: uint8 codec id (non-zero), uvarint original
// length (<= lim.MaxDecodedSize), then at least one byte of compressed
// data. The returned data aliases b and is nil when empty.
func parseBody(what string, b []byte, f Flags, lim Limits) (body, error) {
	if !f.Has(FlagCompressed) {
		if len(b) == 0 {
			b = nil
		}
		return body{data: b}, nil
	}
	c := cursor{b: b, what: what}
	codec, err := c.u8("codec id")
	if err != nil {
		return body{}, err
	}
	if codec == 0 {
		return body{}, violation("%s: compressed body with codec id 0", what)
	}
	orig, err := c.uvarint("original length")
	if err != nil {
		return body{}, err
	}
	if orig > uint64(lim.MaxDecodedSize) {
		return body{}, violation("%s: original length %d exceeds max decoded size %d", what, orig, lim.MaxDecodedSize)
	}
	if len(c.b) == 0 {
		return body{}, violation("%s: compressed body without compressed data", what)
	}
	return body{data: c.b, compressed: true, codec: codec, origLen: uint32(orig)}, nil
}

// size returns the encoded size of the body and validates it.
func (b *body) size(what string) (int, error) {
	if !b.compressed {
		return len(b.data), nil
	}
	if b.codec == 0 {
		return 0, invalid("%s: compressed body with codec id 0", what)
	}
	if len(b.data) == 0 {
		return 0, invalid("%s: compressed body without compressed data", what)
	}
	return 1 + uvarintLen(uint64(b.origLen)) + len(b.data), nil
}

func (b *body) appendTo(dst []byte) []byte {
	if b.compressed {
		dst = append(dst, b.codec)
		dst = binary.AppendUvarint(dst, uint64(b.origLen))
	}
	return append(dst, b.data...)
}
