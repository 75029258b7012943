package protocol

import (
	"io"
	"sync"
)

// readAhead is a Reader's buffered view of its byte stream: bufio's
// reading with a buffer that can be exchanged for a larger or a smaller
// one while bytes are buffered (they are copied over), which bufio
// cannot do. Not safe for concurrent use.
type readAhead struct {
	buf  []byte
	r, w int // buf[r:w] is buffered
	src  io.Reader
	err  error // the source's, returned once the buffer is drained
}

// maxEmptyReads bounds the reads that return neither bytes nor an error.
const maxEmptyReads = 100

func (a *readAhead) buffered() int { return a.w - a.r }
func (a *readAhead) size() int     { return len(a.buf) }

// fill reads once more from the source into the free end of the buffer,
// moving what is buffered to its start first when the end is full.
func (a *readAhead) fill() {
	if a.r > 0 && (a.r == a.w || a.w == len(a.buf)) {
		a.w = copy(a.buf, a.buf[a.r:a.w])
		a.r = 0
	}
	for range maxEmptyReads {
		n, err := a.src.Read(a.buf[a.w:])
		if n < 0 || n > len(a.buf)-a.w {
			panic("protocol: the connection's reader returned an invalid count")
		}
		a.w += n
		if err != nil {
			a.err = err
			return
		}
		if n > 0 {
			return
		}
	}
	a.err = io.ErrNoProgress
}

// peek returns the next n buffered bytes (n at most the buffer's size),
// reading until they are there; with fewer, the source's error.
func (a *readAhead) peek(n int) ([]byte, error) {
	for a.w-a.r < n && a.err == nil {
		if len(a.buf)-a.r < n {
			a.w = copy(a.buf, a.buf[a.r:a.w])
			a.r = 0
		}
		a.fill()
	}
	if a.w-a.r < n {
		return nil, a.readErr()
	}
	return a.buf[a.r : a.r+n], nil
}

// discard drops n buffered bytes.
func (a *readAhead) discard(n int) { a.r += n }

// Read is io.Reader's: buffered bytes first; a read at least as large as
// the buffer goes to the source directly when nothing is buffered.
func (a *readAhead) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if a.r == a.w {
		if a.err != nil {
			return 0, a.readErr()
		}
		if len(p) >= len(a.buf) {
			n, err := a.src.Read(p)
			if n < 0 || n > len(p) {
				panic("protocol: the connection's reader returned an invalid count")
			}
			if err != nil {
				a.err = err
				if n > 0 {
					return n, nil
				}
				return 0, a.readErr()
			}
			return n, nil
		}
		a.r, a.w = 0, 0
		a.fill()
		if a.r == a.w {
			return 0, a.readErr()
		}
	}
	n := copy(p, a.buf[a.r:a.w])
	a.r += n
	return n, nil
}

// readErr returns the source's error once and clears it, as bufio does:
// a later read tries the source again (a net.Conn's error is permanent;
// the Reader's own errors are sticky above this).
func (a *readAhead) readErr() error {
	err := a.err
	a.err = nil
	return err
}

// exchange moves the buffered bytes into buf and makes it the buffer; it
// returns the buffer it replaces. The caller checked that they fit.
func (a *readAhead) exchange(buf []byte) []byte {
	old := a.buf
	a.w = copy(buf, a.buf[a.r:a.w])
	a.r = 0
	a.buf = buf
	return old
}

// largeReadAheads holds the LargeReadBufferSize buffers of Readers that
// switched back to their own.
var largeReadAheads = sync.Pool{New: func() any { b := make([]byte, LargeReadBufferSize); return &b }}
