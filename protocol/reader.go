package protocol

import (
	"errors"
	"io"
	"sync"
	"sync/atomic"
)

// DefaultReadBufferSize is the bufio buffer size used by [NewReader]:
// the read-ahead a connection holds even while idle. Payloads up to this
// size are returned from it without a copy; larger ones are read into a
// payload buffer that exists only while such frames arrive.
const DefaultReadBufferSize = 4 << 10

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
	br       readAhead
	small    []byte      // the read-ahead the Reader owns
	largep   *[]byte     // the pooled large read-ahead while br uses it
	large    atomic.Bool // the large read-ahead is wanted (SetLargeReadAhead)
	maxFrame uint32
	hdr      [HeaderSize]byte
	bufp     *[]byte // payload buffer for frames larger than br's buffer; pooled
	buf      []byte  // *bufp while it is held
	budget   *FrameBudget
	held     int64 // bytes of budget the last large frame holds
	err      error
}

// NewReader returns a Reader reading from r through a bufio.Reader of
// DefaultReadBufferSize bytes, enforcing lim.MaxFrameSize.
func NewReader(r io.Reader, lim Limits) *Reader {
	return NewReaderSize(r, DefaultReadBufferSize, lim)
}

// NewReaderSize is like [NewReader] with a bufio buffer of size bytes.
func NewReaderSize(r io.Reader, size int, lim Limits) *Reader {
	if size < HeaderSize {
		size = HeaderSize
	}
	small := make([]byte, size)
	return &Reader{br: readAhead{buf: small, src: r}, small: small, maxFrame: lim.MaxFrameSize}
}

// LargeReadBufferSize is the read-ahead of a Reader while
// [Reader.SetLargeReadAhead] is on.
const LargeReadBufferSize = 32 << 10

// SetLargeReadAhead switches the Reader between its own read-ahead and a
// LargeReadBufferSize one taken from a pool shared by all Readers (given
// back when switched off or when the Reader fails). A connection that
// carries streams turns it on while any stream lives, so that a stream
// of small messages costs one read per 32 KiB instead of one per 4 KiB,
// and an idle connection holds the small read-ahead only. It may be
// called from any goroutine; the switch happens at the next frame
// boundary where nothing is buffered (no byte already read is lost).
func (r *Reader) SetLargeReadAhead(on bool) { r.large.Store(on) }

// switchReadAhead applies SetLargeReadAhead at a frame boundary: to the
// large read-ahead at once (what is buffered moves over), back to the
// Reader's own once what is buffered fits in it.
func (r *Reader) switchReadAhead(large bool) {
	switch {
	case large && r.largep == nil && len(r.small) < LargeReadBufferSize:
		r.largep = largeReadAheads.Get().(*[]byte)
		r.br.exchange(*r.largep)
	case !large && r.largep != nil && r.br.buffered() <= len(r.small):
		r.br.exchange(r.small)
		largeReadAheads.Put(r.largep)
		r.largep = nil
	}
}

// SetMaxFrameSize changes the maximum payload length accepted from the next
// frame on, e.g. to the value announced in the handshake.
func (r *Reader) SetMaxFrameSize(n uint32) { r.maxFrame = n }

// SetBudget makes the Reader charge the payload buffer of every frame
// larger than its read-ahead to b while the frame arrives: before the
// buffer grows, the growth is taken from b, and a frame that cannot get it
// fails with [ErrFrameBudget]. When the frame is complete its charge stays
// until the next ReadFrame, or moves to the caller with [Reader.TakeCharge].
// Nil (the default) charges nothing.
func (r *Reader) SetBudget(b *FrameBudget) { r.budget = b }

// TakeCharge hands the caller the budget bytes the frame ReadFrame just
// returned holds (0 for a frame within the read-ahead or without a
// budget): the caller now owns them and gives them back with
// FrameBudget.Release, for example when the copy it keeps of the payload
// is no longer needed. Untaken charges are released by the next ReadFrame.
func (r *Reader) TakeCharge() int64 {
	n := r.held
	r.held = 0
	return n
}

// ErrReaderClosed is what ReadFrame returns after [Reader.Close].
var ErrReaderClosed = errors.New("sluice/protocol: reader closed")

// Close gives back what the Reader holds for the frame ReadFrame returned
// last: its budget charge (unless a caller took it with TakeCharge) and
// its payload buffer. An owner that stops reading must close its Reader:
// otherwise the charge of a frame it refused after reading it (a payload
// that violates the protocol, say) stays held for good, since only the
// next ReadFrame would release it. ReadFrame returns [ErrReaderClosed]
// afterwards; Close is idempotent. Like ReadFrame, it must not run
// concurrently with another method.
func (r *Reader) Close() {
	if r.held > 0 {
		r.budget.Release(r.held)
		r.held = 0
	}
	r.releaseBuf()
	if r.largep != nil {
		r.br.exchange(r.small[:0:0])
		largeReadAheads.Put(r.largep)
		r.largep = nil
	}
	if r.err == nil {
		r.err = ErrReaderClosed
	}
}

// ReadFrame reads the next frame and returns its validated header and its
// payload. The payload aliases the Reader's internal buffer and is valid
// only until the next call to ReadFrame; the caller must copy what it keeps.
//
// The header is validated before the payload is read, so an oversized
// length is rejected without reading or buffering the payload. Memory
// follows the bytes that arrived, never the length a header declares: a
// payload larger than the read-ahead is read into a buffer that doubles as
// its bytes come in (from 16 KiB), so a peer that declares 4 MiB and sends
// nothing more costs its connection at most 16 KiB beyond the read-ahead.
// The payload buffer is kept while frames keep coming and goes back to a
// pool shared by all Readers when the read-ahead is empty (the next read
// may block: the connection may be idle), so an idle connection holds the
// read-ahead only; in steady state ReadFrame does not allocate.
//
// ReadFrame returns io.EOF if the stream ends exactly at a frame boundary,
// io.ErrUnexpectedEOF if it ends inside a frame, a [*ProtocolError] for an
// invalid header, [ErrFrameBudget] when the budget cannot cover a large
// frame, or the underlying reader's error.
func (r *Reader) ReadFrame() (Header, []byte, error) {
	if r.held > 0 {
		r.budget.Release(r.held)
		r.held = 0
	}
	if r.err != nil {
		return Header{}, nil, r.err
	}
	h, p, err := r.readFrame()
	if err != nil {
		r.err = err
		if r.held > 0 {
			r.budget.Release(r.held)
			r.held = 0
		}
		r.releaseBuf()
		if r.largep != nil { // nothing is read any more: the buffered bytes do not matter
			r.br.exchange(r.small[:0:0])
			largeReadAheads.Put(r.largep)
			r.largep = nil
		}
		return Header{}, nil, err
	}
	return h, p, nil
}

func (r *Reader) readFrame() (Header, []byte, error) {
	if r.br.buffered() == 0 {
		r.releaseBuf() // the next read may wait: hold no payload buffer
	}
	r.switchReadAhead(r.large.Load())
	if _, err := io.ReadFull(&r.br, r.hdr[:]); err != nil {
		return Header{}, nil, err // io.EOF only when no byte was read
	}
	h, err := ParseHeader(r.hdr[:], r.maxFrame)
	if err != nil {
		return Header{}, nil, err
	}
	var p []byte
	if n := int(h.Length); n <= r.br.size() {
		p, err = r.br.peek(n)
		if err == nil {
			r.br.discard(n)
			p = p[:n:n]
		}
	} else {
		p, err = r.readLarge(n)
	}
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return Header{}, nil, err
	}
	return h, p, nil
}

// readLarge reads the next n bytes into the payload buffer, growing it
// only as the bytes arrive, and charging the budget before each growth.
func (r *Reader) readLarge(n int) ([]byte, error) {
	if r.bufp == nil {
		r.bufp = payloadBufs.Get().(*[]byte)
		r.buf = (*r.bufp)[:0]
	}
	p := r.buf[:0]
	for len(p) < n {
		// The frame may now occupy twice what arrived (at least the
		// first chunk): charge that, then grow to it if need be.
		want := min(n, max(2*len(p), firstPayloadChunk))
		if err := r.charge(int64(want)); err != nil {
			return nil, err
		}
		if want > cap(p) {
			grown := make([]byte, len(p), want)
			copy(grown, p)
			p = grown
			r.buf = p
		}
		k, err := r.br.Read(p[len(p):want])
		p = p[:len(p)+k]
		if err != nil && len(p) < n {
			return nil, err
		}
	}
	return p[:n:n], nil
}

// charge brings the frame's charge up to n bytes.
func (r *Reader) charge(n int64) error {
	if r.budget == nil || n <= r.held {
		return nil
	}
	if !r.budget.TryAcquire(n - r.held) {
		return ErrFrameBudget
	}
	r.held = n
	return nil
}

// releaseBuf gives the payload buffer back to the pool.
func (r *Reader) releaseBuf() {
	if r.bufp == nil {
		return
	}
	if cap(r.buf) <= maxPooledPayload {
		*r.bufp = r.buf[:0]
		payloadBufs.Put(r.bufp)
	}
	r.bufp, r.buf = nil, nil
}

// maxPooledPayload keeps payload buffers larger than the default maximum
// frame size out of the pool.
const maxPooledPayload = 4 << 20

var payloadBufs = sync.Pool{New: func() any { return new([]byte) }}
