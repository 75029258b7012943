package codecs

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/bits"
	"sync"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
)

// MaxIdentityBomb is the largest "bomb" Bomb builds for identity, whose
// body is the decoded bytes themselves.
const MaxIdentityBomb = 64 << 20

// Bomb returns one complete compressed body in the format of the built-in
// codec name that decodes to decoded zero bytes: a decompression bomb for
// tests. It never holds the decoded bytes and costs a few milliseconds even
// for a 1 GiB bomb: gzip and br run their streaming encoder over two pieces
// of 1 MiB of zeros, flushed, and repeat the second piece's bytes (valid
// after any run of zeros); s2 repeats one chunk of a quantum of zeros
// (its stream has no total length, and every chunk a decoded length of at
// most a quantum); zstd is one frame of RLE blocks, built directly. It
// declares no decoded size where the format allows (zstd: no content size;
// gzip's trailer does carry it), so a decoder has to stop it by counting
// its output. Bodies are cached per (name,
// decoded); each call returns a copy the caller may change. identity has no
// compressed form: its "bomb" is the zeros themselves, at most
// MaxIdentityBomb bytes.
func Bomb(name string, decoded int64) ([]byte, error) {
	if decoded < 0 {
		return nil, fmt.Errorf("codecs: Bomb(%q, %d): decoded must be at least 0", name, decoded)
	}
	key := bombKey{name, decoded}
	bombs.mu.Lock()
	b, ok := bombs.m[key]
	bombs.mu.Unlock()
	if !ok {
		var err error
		if b, err = buildBomb(name, decoded); err != nil {
			return nil, err
		}
		bombs.mu.Lock()
		bombs.m[key] = b
		bombs.mu.Unlock()
	}
	return bytes.Clone(b), nil
}

type bombKey struct {
	name    string
	decoded int64
}

var bombs = struct {
	mu sync.Mutex
	m  map[bombKey][]byte
}{m: map[bombKey][]byte{}}

// zeros reads n zero bytes.
type zeros struct{ n int64 }

func (z *zeros) Read(p []byte) (int, error) {
	if z.n == 0 {
		return 0, io.EOF
	}
	k := int(min(int64(len(p)), z.n))
	clear(p[:k])
	z.n -= int64(k)
	return k, nil
}

func buildBomb(name string, decoded int64) ([]byte, error) {
	switch name {
	case "identity":
		if decoded > MaxIdentityBomb {
			return nil, fmt.Errorf("codecs: Bomb(%q, %d): identity bodies are their decoded bytes; at most %d: %w", name, decoded, MaxIdentityBomb, errors.ErrUnsupported)
		}
		return make([]byte, decoded), nil
	case "zstd":
		return zstdBomb(decoded), nil
	case "gzip":
		w, err := gzip.NewWriterLevel(nil, gzip.BestSpeed)
		if err != nil {
			return nil, err
		}
		return repeated(w, w.Reset, decoded, gzipTrailer(decoded))
	case "br":
		w := brotli.NewWriterOptions(nil, brotli.WriterOptions{Quality: 1, LGWin: 22})
		return repeated(w, w.Reset, decoded, []byte{0x03}) // ISLAST, ISLASTEMPTY
	case "s2":
		return s2Bomb(decoded)
	}
	return nil, fmt.Errorf("codecs: Bomb(%q, %d): no built-in codec named %q", name, decoded, name)
}

// bombPiece is the decoded size of one repeated piece of a bomb.
const bombPiece = 1 << 20

// flushWriter is a streaming compressor that can end its output at a byte
// boundary without ending the stream.
type flushWriter interface {
	io.WriteCloser
	Flush() error
}

// repeated builds a bomb with a streaming encoder, for formats whose only
// state between flushed pieces is the window (deflate blocks carry their own
// codes; brotli meta-blocks too, and zeros need no distance but the last):
// the encoder writes a first piece of zeros and flushes, then a second, whose
// bytes decode to another piece of zeros after any run of zeros and are
// repeated; a last short piece and end (the format's final empty block and
// trailer) close it. Only three pieces are ever encoded, so a 1 GiB bomb
// costs about three megabytes of encoding; TestBombsDecodeToZeros decodes
// built bombs in full.
func repeated(w flushWriter, reset func(io.Writer), decoded int64, end []byte) ([]byte, error) {
	var buf bytes.Buffer
	reset(&buf)
	if decoded <= 2*bombPiece {
		if _, err := io.Copy(w, &zeros{decoded}); err != nil {
			return nil, err
		}
		if err := w.Close(); err != nil {
			return nil, err
		}
		return buf.Bytes(), nil
	}
	piece := func(n int64) ([]byte, error) {
		start := buf.Len()
		if _, err := io.Copy(w, &zeros{n}); err != nil {
			return nil, err
		}
		if err := w.Flush(); err != nil {
			return nil, err
		}
		return buf.Bytes()[start:], nil
	}
	if _, err := piece(bombPiece); err != nil {
		return nil, err
	}
	again, err := piece(bombPiece)
	if err != nil {
		return nil, err
	}
	again = bytes.Clone(again)
	for range decoded/bombPiece - 2 {
		buf.Write(again)
	}
	if rest := decoded % bombPiece; rest > 0 {
		if _, err := piece(rest); err != nil {
			return nil, err
		}
	}
	buf.Write(end)
	return buf.Bytes(), nil
}

// gzipTrailer is a final empty fixed-code deflate block, then the CRC-32
// and size (mod 2^32) of decoded zero bytes.
func gzipTrailer(decoded int64) []byte {
	zero := make([]byte, bombPiece)
	var sum uint32
	for left := decoded; left > 0; left -= bombPiece {
		sum = crc32.Update(sum, crc32.IEEETable, zero[:min(left, bombPiece)])
	}
	return binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32([]byte{0x03, 0x00}, sum), uint32(decoded))
}

// zstdBomb is one zstd frame that declares no content size and has no
// checksum, with a window of decoded bytes rounded up to a power of two
// within [1 KiB, 1 MiB], whose blocks are RLE blocks of zeros (up to 128
// KiB each), built directly.
func zstdBomb(decoded int64) []byte {
	windowLog := min(max(bits.Len64(uint64(max(decoded, 1)-1)), 10), 20)
	block := min(int64(1)<<windowLog, 128<<10)
	b := []byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, byte(windowLog-10) << 3} // magic; no FCS, no checksum; window
	if decoded == 0 {
		return append(b, 0x01, 0x00, 0x00) // one last, empty raw block
	}
	for left := decoded; left > 0; left -= block {
		n := min(left, block)
		h := uint32(n)<<3 | 1<<1 // RLE
		if left <= block {
			h |= 1 // last
		}
		b = append(b, byte(h), byte(h>>8), byte(h>>16), 0x00)
	}
	return b
}

// s2Bomb is an S2 body of decoded zeros in S2's canonical chunking: the
// stream identifier, one chunk of a quantum of zeros repeated, and the
// short last chunk.
func s2Bomb(decoded int64) ([]byte, error) {
	zero := make([]byte, s2Chunk)
	buf := make([]byte, 0, 2*(s2ChunkHeader+s2.MaxEncodedLen(s2Chunk)))
	full, ok := s2AppendChunk(buf, zero)
	last, ok2 := s2AppendChunk(full[len(full):], zero[:decoded%s2Chunk])
	if !ok || !ok2 {
		return nil, fmt.Errorf("codecs: Bomb(%q, %d): a chunk of zeros does not fit its worst case", "s2", decoded)
	}
	b := make([]byte, 0, len(s2Identifier)+int(decoded/s2Chunk)*len(full)+len(last))
	b = append(b, s2Identifier...)
	for range decoded / s2Chunk {
		b = append(b, full...)
	}
	return append(b, last...), nil
}
