package codecs

import (
	"encoding/binary"
	"hash/crc32"
	"sync"

	"github.com/klauspost/compress/s2"
	"github.com/sluicerpc/sluice/spi"
)

// S2 returns the S2 codec (wire profile "s2", from
// github.com/klauspost/compress/s2). A body is one S2 stream in the framed
// format (the Snappy framing format with S2 blocks: what s2.Writer writes
// and any s2.Reader reads) in one canonical chunking:
//
//   - the stream identifier chunk ("S2sTwO"), once, first;
//   - data chunks, compressed (an S2 block) or stored when compressing
//     does not shrink them, each with the masked CRC-32C of its decoded
//     bytes, holding exactly spi.DecodeQuantum decoded bytes each, but
//   - the last, which holds fewer: the rest of the message, none when its
//     length is a multiple of the quantum (an empty message is the
//     identifier and one empty chunk).
//
// The short last chunk ends the body. So a stream cut at a chunk boundary,
// which the framed format alone cannot tell from a shorter stream, ends with
// a full chunk and is corrupt; any byte after the short chunk is corrupt;
// and so are chunks sluice never writes (padding, skippable, index, a
// second identifier) and chunks longer than the quantum. Bodies from other
// writers (s2.Writer's 1 MiB blocks) are refused.
//
// Decompress walks the chunks itself, with no s2.Reader (whose block buffer
// would be a second copy and its own allocation of up to its MaxBlockSize):
// a chunk's block header declares its decoded length, checked against the
// quantum and the limit before the block is decoded straight into the
// output (dst's spare capacity, then pooled quanta), and the CRC after. The
// output stops at the limit: the chunk that would pass it is refused
// (ErrDecodedTooLarge) undecoded. Memory follows decoded bytes; no total
// length is declared, or trusted. The context is checked before the first
// chunk and between chunks, so at most one quantum of output lies between
// two checks. A decoder's only state is its pooled list of quanta.
//
// The blocks are independent, so matches never reach back more than a
// quantum: messages larger than that compress a little worse than in one
// S2 block, and decode in pieces that a cancellation can stop.
func S2() spi.Codec { return s2Codec{} }

type s2Codec struct{}

const (
	// s2Identifier is the stream identifier chunk that starts a body.
	s2Identifier = "\xff\x06\x00\x00S2sTwO"
	// s2ChunkHeader is a data chunk's type, 3-byte length and CRC.
	s2ChunkHeader = 8
	// s2Compressed and s2Stored are the data chunk types.
	s2Compressed = 0x00
	s2Stored     = 0x01
	// s2Chunk is the decoded size of every chunk but the last.
	s2Chunk = spi.DecodeQuantum
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// s2CRC is the framing format's masked CRC-32C of decoded bytes.
func s2CRC(b []byte) uint32 {
	c := crc32.Update(0, castagnoli, b)
	return c>>15 | c<<17 + 0xa282ead8
}

// s2Scratch holds the encoded form of one chunk when dst's spare capacity
// is smaller than its worst case.
var s2Scratch = sync.Pool{New: func() any {
	b := make([]byte, s2.MaxEncodedLen(s2Chunk))
	return &b
}}

func (s2Codec) Name() string { return "s2" }

func (s2Codec) Compress(dst, src []byte) ([]byte, bool, error) {
	if cap(dst)-len(dst) < len(s2Identifier) {
		return dst, false, nil
	}
	out := append(dst, s2Identifier...)
	for {
		n := min(len(src), s2Chunk)
		var ok bool
		if out, ok = s2AppendChunk(out, src[:n]); !ok {
			return dst, false, nil
		}
		if src = src[n:]; n < s2Chunk {
			return out, true, nil
		}
	}
}

// s2AppendChunk appends the data chunk of piece (at most s2Chunk bytes) to
// out within its capacity: compressed, or stored when that is no longer,
// and reports false, out unchanged, when it does not fit.
func s2AppendChunk(out, piece []byte) ([]byte, bool) {
	start := len(out)
	spare := cap(out) - start
	if spare < s2ChunkHeader {
		return out, false
	}
	var enc []byte
	if s2ChunkHeader+s2.MaxEncodedLen(len(piece)) <= spare {
		enc = s2.Encode(out[start+s2ChunkHeader:cap(out)], piece)
	} else {
		bp := s2Scratch.Get().(*[]byte)
		defer s2Scratch.Put(bp)
		enc = s2.Encode(*bp, piece)
	}
	typ := byte(s2Compressed)
	if len(enc) >= len(piece) {
		typ, enc = s2Stored, piece
	}
	if s2ChunkHeader+len(enc) > spare {
		return out, false
	}
	out = out[:start+s2ChunkHeader+len(enc)]
	size := 4 + len(enc)
	out[start], out[start+1], out[start+2], out[start+3] = typ, byte(size), byte(size>>8), byte(size>>16)
	binary.LittleEndian.PutUint32(out[start+4:], s2CRC(piece))
	copy(out[start+s2ChunkHeader:], enc) // a no-op when encoded in place
	return out, true
}
