package protocol

import (
	"bufio"
	"errors"
	"io"
)

// DefaultReadBufferSize is the bufio buffer size used by [NewReader].
const DefaultReadBufferSize = 32 << 10

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
// length is rejected without reading or buffering the payload. The buffer
// grows to the largest payload seen (at most the maximum frame size); in
// steady state ReadFrame does not allocate.
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
	n := int(h.Length)
	if cap(r.buf) < n {
		// Grow geometrically, never beyond the maximum frame size.
		c := max(n, min(2*cap(r.buf), int(r.maxFrame)))
		r.buf = make([]byte, c)
	}
	p := r.buf[:n:n]
	if _, err := io.ReadFull(r.br, p); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return Header{}, nil, err
	}
	return h, p, nil
}
