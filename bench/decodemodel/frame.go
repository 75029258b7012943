package decodemodel

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
)

// Frame types. A frame is a 9-byte header (type, call id as a big-endian
// uint32, body length as a big-endian uint32) and the body.
const (
	frameRequest            byte = 1 // body: codec index, uvarint original length, compressed bytes
	frameCancel             byte = 2 // no body: cancel call id
	frameResponse           byte = 3 // body: one status byte
	frameRequestCancellable byte = 4 // a frameRequest the client may cancel
)

// Response statuses.
const (
	statusOK        byte = 0
	statusCancelled byte = 1 // the call's context ended (Cancel or Stop)
	statusRefused   byte = 2 // call capacity full: refused before any decode
	statusFailed    byte = 3 // corrupt body or decoded length mismatch
)

const (
	headerLen = 9
	maxBody   = 4 << 20 // the largest body a reader accepts
)

var errFrameTooLarge = errors.New("decodemodel: frame body above the maximum")

func putHeader(h []byte, typ byte, id uint32, n int) {
	h[0] = typ
	binary.BigEndian.PutUint32(h[1:], id)
	binary.BigEndian.PutUint32(h[5:], uint32(n))
}

// frameReader reads frames from a connection into one buffer it owns. It
// is used by one goroutine, the connection's reader. next blocks; poll
// never blocks (it is what ModelQuanta calls between decode quanta).
type frameReader struct {
	conn net.Conn
	raw  syscall.RawConn // nil when the connection has no file descriptor
	buf  []byte
	r, w int // buf[r:w] is unread
	// scanned is the offset (>= r) up to which poll has looked at whole
	// frames for Cancels; next consumes them again (a Cancel is idempotent).
	scanned int
}

func newFrameReader(c net.Conn) *frameReader {
	fr := &frameReader{conn: c, buf: make([]byte, 2*(maxBody+headerLen))}
	if sc, ok := c.(syscall.Conn); ok {
		fr.raw, _ = sc.SyscallConn()
	}
	return fr
}

// next returns the next frame. body aliases the reader's buffer and is
// valid only until the next call of next or poll.
func (fr *frameReader) next() (typ byte, id uint32, body []byte, err error) {
	for {
		if typ, id, n, ok := fr.peek(fr.r); ok {
			if n < 0 {
				return 0, 0, nil, errFrameTooLarge
			}
			start := fr.r + headerLen
			fr.r = start + n
			fr.scanned = max(fr.scanned, fr.r)
			return typ, id, fr.buf[start:fr.r], nil
		}
		fr.compact()
		m, err := fr.conn.Read(fr.buf[fr.w:])
		fr.w += m
		if m == 0 && err != nil {
			if err == io.EOF && fr.w > fr.r {
				err = io.ErrUnexpectedEOF
			}
			return 0, 0, nil, err
		}
	}
}

// peek parses a whole frame at offset at, if there is one; n < 0 (with
// ok) for a body above maxBody.
func (fr *frameReader) peek(at int) (typ byte, id uint32, n int, ok bool) {
	if fr.w-at < headerLen {
		return 0, 0, 0, false
	}
	h := fr.buf[at : at+headerLen]
	size := binary.BigEndian.Uint32(h[5:])
	if size > maxBody {
		return h[0], 0, -1, true
	}
	n = int(size)
	if fr.w-at-headerLen < n {
		return 0, 0, 0, false
	}
	return h[0], binary.BigEndian.Uint32(h[1:]), n, true
}

// compact moves the unread bytes to the start of the buffer when the
// space after them cannot hold the rest of a largest frame.
func (fr *frameReader) compact() {
	if len(fr.buf)-fr.r >= maxBody+headerLen || fr.r == 0 {
		return
	}
	n := copy(fr.buf, fr.buf[fr.r:fr.w])
	fr.scanned -= fr.r
	fr.r, fr.w = 0, n
}

// poll reads, without blocking, what the socket already holds (as much as
// fits after the unread bytes), and calls cancel for every Cancel frame
// among the whole frames not scanned before. It reports whether it read
// anything. It must not be called while a body returned by next is still
// in use (the buffer may be compacted).
func (fr *frameReader) poll(cancel func(id uint32)) {
	if fr.raw != nil && fr.w < len(fr.buf) {
		var m int
		_ = fr.raw.Read(func(fd uintptr) bool {
			m, _ = syscall.Read(int(fd), fr.buf[fr.w:])
			return true // never wait for readiness
		})
		if m > 0 {
			fr.w += m
		}
	}
	for {
		typ, id, n, ok := fr.peek(fr.scanned)
		if !ok || n < 0 {
			return
		}
		if typ == frameCancel {
			cancel(id)
		}
		fr.scanned += headerLen + n
	}
}

func (fr *frameReader) String() string {
	return fmt.Sprintf("frameReader{r=%d w=%d scanned=%d}", fr.r, fr.w, fr.scanned)
}
