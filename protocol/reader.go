package protocol

import (
	"bufio"
	"errors"
	"io"
)

// DefaultReadBufferSize is the bufio buffer size used by [NewReader].
const DefaultReadBufferSize = 32 << 10

// firstPayloadChunk is the least a payload buffer grows to: a frame
// declaring more is read into a buffer that doubles as its bytes arrive.
const firstPayloadChunk = 16 << 10

// Reader reads frames from a byte stream. It validates every header with
// [ParseHeader] against the current maximum frame size and returns the
// payload in a reused internal buffer; it does not decode payloads.
//
// A Reader is not safe for concurrent use. Errors are sticky: after a
// violation, an I/O error or EOF, every later ReadFrame returns the same
// error, since the stream cannot be resynchronized.
type Reader struct {
	br       *bufio.Reader
	maxFrame uint32
	hdr      [HeaderSize]byte
	buf      []byte
	err      error
}

// NewReader returns a Reader reading from r through a bufio.Reader of
// DefaultReadBufferSize bytes, enforcing lim.MaxFrameSize.
func NewReader(r io.Reader, lim Limits) *Reader {
	return NewReaderSize(r, DefaultReadBufferSize, lim)
}

// NewReaderSize is like [NewReader] with a bufio buffer of size bytes.
func NewReaderSize(r io.Reader, size int, lim Limits) *Reader {
	return &Reader{br: bufio.NewReaderSize(r, size), maxFrame: lim.MaxFrameSize}
}

// SetMaxFrameSize changes the maximum payload length accepted from the next
// frame on, e.g. to the value announced in the handshake.
func (r *Reader) SetMaxFrameSize(n uint32) { r.maxFrame = n }

// ReadFrame reads the next frame and returns its validated header and its
// payload. The payload aliases the Reader's internal buffer and is valid
// only until the next call to ReadFrame; the caller must copy what it keeps.
//
// The header is validated before the payload is read, so an oversized
// length is rejected without reading or buffering the payload. Memory
// follows the bytes that arrived, never the length a header declares: a
// payload larger than the buffer is read into one that doubles as its
// bytes come in (from 16 KiB), so a peer that declares 4 MiB and sends
// nothing more costs its connection at most 16 KiB beyond the buffer it
// already had. The buffer is kept for later frames, growing to the
// largest payload seen (at most the maximum frame size); in steady state
// ReadFrame does not allocate.
//
// ReadFrame returns io.EOF if the stream ends exactly at a frame boundary,
// io.ErrUnexpectedEOF if it ends inside a frame, a [*ProtocolError] for an
// invalid header, or the underlying reader's error.
func (r *Reader) ReadFrame() (Header, []byte, error) {
	if r.err != nil {
		return Header{}, nil, r.err
	}
	h, p, err := r.readFrame()
	if err != nil {
		r.err = err
		return Header{}, nil, err
	}
	return h, p, nil
}

func (r *Reader) readFrame() (Header, []byte, error) {
	if _, err := io.ReadFull(r.br, r.hdr[:]); err != nil {
		return Header{}, nil, err // io.EOF only when no byte was read
	}
	h, err := ParseHeader(r.hdr[:], r.maxFrame)
	if err != nil {
		return Header{}, nil, err
	}
	p, err := r.readPayload(int(h.Length))
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return Header{}, nil, err
	}
	return h, p, nil
}

// readPayload reads the next n bytes into the reused buffer, growing it
// only as the bytes arrive.
func (r *Reader) readPayload(n int) ([]byte, error) {
	if n <= cap(r.buf) {
		p := r.buf[:n:n]
		_, err := io.ReadFull(r.br, p)
		return p, err
	}
	p := r.buf[:0]
	for len(p) < n {
		if len(p) == cap(p) {
			grown := make([]byte, len(p), min(n, max(2*cap(p), firstPayloadChunk)))
			copy(grown, p)
			p = grown
			r.buf = p
		}
		k, err := r.br.Read(p[len(p):min(cap(p), n)])
		p = p[:len(p)+k]
		if err != nil && len(p) < n {
			return nil, err
		}
	}
	return p[:n:n], nil
}
