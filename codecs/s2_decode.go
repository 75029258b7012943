package codecs

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/klauspost/compress/s2"
	"github.com/sluicerpc/sluice/spi"
)

// s2Decoder is a pooled decoder's state: the quanta that hold output past
// dst's capacity. S2 blocks decode without state of their own.
type s2Decoder struct{ out spill }

var s2Decoders = sync.Pool{New: func() any { return new(s2Decoder) }}

func (s2Codec) Decompress(ctx context.Context, dst, src []byte, limit int) ([]byte, error) {
	limit = max(limit, 0) // the contract says at least 0; a negative limit allows nothing
	base := len(dst)
	if err := ctx.Err(); err != nil {
		return dst, err
	}
	if len(src) < len(s2Identifier) || string(src[:len(s2Identifier)]) != s2Identifier {
		return dst, spi.CorruptError("s2", "the body does not start with the stream identifier", nil)
	}
	d := s2Decoders.Get().(*s2Decoder)
	defer s2Decoders.Put(d)
	sp := &d.out
	defer sp.release()

	out, pos, produced := dst, len(s2Identifier), 0
	for chunk := 0; ; chunk++ {
		if chunk > 0 {
			if err := ctx.Err(); err != nil {
				return dst[:base], err
			}
		}
		typ, data, crc, next, err := s2NextChunk(src, pos)
		if err != nil {
			return dst[:base], err
		}
		n := len(data)
		if typ == s2Compressed {
			if n, err = s2.DecodedLen(data); err != nil {
				return dst[:base], spi.CorruptError("s2", fmt.Sprintf("chunk %d: reading the block header", chunk), err)
			}
		}
		switch {
		case n > s2Chunk:
			return dst[:base], spi.CorruptError("s2", fmt.Sprintf("chunk %d holds %d decoded bytes, more than %d", chunk, n, s2Chunk), nil)
		case produced+n > limit:
			return dst[:base], spi.TooLargeError("s2", limit)
		case n < s2Chunk && next != len(src):
			return dst[:base], spi.CorruptError("s2", fmt.Sprintf("%d trailing bytes after the last chunk", len(src)-next), nil)
		}
		// Every chunk but the last fills a quantum, so a spilled chunk
		// always starts a fresh quantum: the spill is contiguous for it.
		inDst := sp.n == 0 && cap(out)-len(out) >= n
		var buf []byte
		if inDst {
			buf = out[len(out) : len(out)+n]
		} else {
			buf = sp.next()[:n]
		}
		if typ == s2Compressed {
			dec, err := s2.Decode(buf, data)
			if err != nil || len(dec) != n || (n > 0 && &dec[0] != &buf[0]) {
				return dst[:base], spi.CorruptError("s2", fmt.Sprintf("chunk %d: decoding", chunk), err)
			}
		} else {
			copy(buf, data)
		}
		if s2CRC(buf) != crc {
			return dst[:base], spi.CorruptError("s2", fmt.Sprintf("chunk %d: checksum mismatch", chunk), nil)
		}
		if inDst {
			out = out[:len(out)+n]
		} else {
			sp.n += n
		}
		produced += n
		if pos = next; n < s2Chunk {
			return sp.join(out), nil
		}
	}
}

// s2NextChunk reads the data chunk at src[pos:]: its type, its data (an S2
// block or the stored bytes), its CRC and where the next chunk starts.
func s2NextChunk(src []byte, pos int) (typ byte, data []byte, crc uint32, next int, err error) {
	switch left := len(src) - pos; {
	case left == 0:
		return 0, nil, 0, 0, spi.CorruptError("s2", "the stream ends after a full chunk, without its short last chunk (truncated)", nil)
	case left < 4:
		return 0, nil, 0, 0, spi.CorruptError("s2", "truncated chunk header", nil)
	}
	typ = src[pos]
	size := int(src[pos+1]) | int(src[pos+2])<<8 | int(src[pos+3])<<16
	pos += 4
	switch {
	case typ != s2Compressed && typ != s2Stored:
		return 0, nil, 0, 0, spi.CorruptError("s2", fmt.Sprintf("a chunk of type %#x where a data chunk must be", typ), nil)
	case size < 4:
		return 0, nil, 0, 0, spi.CorruptError("s2", fmt.Sprintf("a data chunk of %d bytes, shorter than its checksum", size), nil)
	case size > len(src)-pos:
		return 0, nil, 0, 0, spi.CorruptError("s2", fmt.Sprintf("truncated chunk: %d bytes of %d", len(src)-pos, size), nil)
	}
	return typ, src[pos+4 : pos+size], binary.LittleEndian.Uint32(src[pos:]), pos + size, nil
}
