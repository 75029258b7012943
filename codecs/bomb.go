package codecs

import (
	"bytes"
	"fmt"
	"io"
	"sync"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
)

// MaxIdentityBomb is the largest "bomb" Bomb builds for identity, whose
// body is the decoded bytes themselves.
const MaxIdentityBomb = 64 << 20

// Bomb returns one complete compressed body in the format of the built-in
// codec name that decodes to decoded zero bytes: a decompression bomb for
// tests. It is built by a streaming encoder over a reader of zeros (for s2,
// by concatenating one small block), never holding the decoded bytes, and
// declares no decoded size where the format allows (zstd: no content size,
// a 1 MiB window; gzip's trailer does carry it), so a decoder has to stop it
// by counting its output. Bodies are cached per (name, decoded); each call
// returns a copy the caller may change. identity has no compressed form: its
// "bomb" is the zeros themselves, at most MaxIdentityBomb bytes.
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
	var buf bytes.Buffer
	src := &zeros{decoded}
	switch name {
	case "identity":
		if decoded > MaxIdentityBomb {
			return nil, fmt.Errorf("codecs: Bomb(%q, %d): identity bodies are their decoded bytes; at most %d", name, decoded, MaxIdentityBomb)
		}
		return make([]byte, decoded), nil
	case "zstd":
		w, err := zstd.NewWriter(&buf, zstd.WithEncoderConcurrency(1), zstd.WithWindowSize(1<<20), zstd.WithZeroFrames(true))
		if err != nil {
			return nil, err
		}
		return finish(&buf, w, src)
	case "gzip":
		w, err := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
		if err != nil {
			return nil, err
		}
		return finish(&buf, w, src)
	case "br":
		return finish(&buf, brotli.NewWriterOptions(&buf, brotli.WriterOptions{Quality: 1, LGWin: 22}), src)
	case "s2":
		return s2Bomb(decoded)
	}
	return nil, fmt.Errorf("codecs: Bomb(%q, %d): no built-in codec named %q", name, decoded, name)
}

func finish(buf *bytes.Buffer, w io.WriteCloser, src io.Reader) ([]byte, error) {
	if _, err := io.CopyBuffer(w, src, make([]byte, 256<<10)); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// s2Bomb concatenates blocks of 1 MiB of zeros (and one shorter tail) into
// one S2 block that declares decoded bytes.
func s2Bomb(decoded int64) ([]byte, error) {
	const piece = 1 << 20
	if decoded > int64(s2.MaxBlockSize) {
		return nil, fmt.Errorf("codecs: Bomb(%q, %d): an S2 block holds at most %d bytes", "s2", decoded, s2.MaxBlockSize)
	}
	zero := make([]byte, min(decoded, piece))
	full := s2.Encode(nil, zero)
	blocks := make([][]byte, 0, decoded/piece+1)
	for range decoded / piece {
		blocks = append(blocks, full)
	}
	if tail := decoded % piece; tail > 0 || decoded == 0 {
		blocks = append(blocks, s2.Encode(nil, zero[:tail]))
	}
	return s2.ConcatBlocks(nil, blocks...)
}
