package reject

import (
	"bytes"
	"io"
	"sync"

	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/encoding/gzip"
)

// preName is the grpc-encoding of the grpc-go flood's requests: gzip,
// under a name of its own so that the flooding process can send each body
// compressed once, as sluice's flood does, instead of compressing every
// request again (2 ms of client CPU per 64 KiB request, which held the
// flood to a few hundred calls per second). The bytes are grpc-go's own
// gzip compressor's, and the server decompresses them with grpc-go's
// gzip (see countingCompressor): only the client's work is saved.
const preName = "gzip-precompressed"

// preCompressor is the client side of preName: Compress remembers the
// compressed form of each body it has seen.
type preCompressor struct {
	gzip  encoding.Compressor
	mu    sync.Mutex
	cache map[string][]byte
	bufs  sync.Pool
}

var registerPre = sync.OnceFunc(func() {
	encoding.RegisterCompressor(&preCompressor{gzip: encoding.GetCompressor(gzip.Name), cache: map[string][]byte{}})
})

func (c *preCompressor) Name() string { return preName }

func (c *preCompressor) Compress(w io.Writer) (io.WriteCloser, error) {
	b, _ := c.bufs.Get().(*[]byte)
	if b == nil {
		b = new([]byte)
	}
	return &preWriter{c: c, w: w, buf: b}, nil
}

func (c *preCompressor) Decompress(r io.Reader) (io.Reader, error) { return c.gzip.Decompress(r) }

// compressed is body compressed by grpc-go's gzip, made on first use.
func (c *preCompressor) compressed(body []byte) ([]byte, error) {
	c.mu.Lock()
	z, ok := c.cache[string(body)]
	c.mu.Unlock()
	if ok {
		return z, nil
	}
	var b bytes.Buffer
	wc, err := c.gzip.Compress(&b)
	if err != nil {
		return nil, err
	}
	if _, err := wc.Write(body); err != nil {
		return nil, err
	}
	if err := wc.Close(); err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.cache[string(body)] = b.Bytes()
	c.mu.Unlock()
	return b.Bytes(), nil
}

// preWriter collects a message and writes its compressed form on Close.
type preWriter struct {
	c   *preCompressor
	w   io.Writer
	buf *[]byte
}

func (p *preWriter) Write(b []byte) (int, error) {
	*p.buf = append(*p.buf, b...)
	return len(b), nil
}

func (p *preWriter) Close() error {
	z, err := p.c.compressed(*p.buf)
	*p.buf = (*p.buf)[:0]
	p.c.bufs.Put(p.buf)
	if err != nil {
		return err
	}
	_, err = p.w.Write(z)
	return err
}
