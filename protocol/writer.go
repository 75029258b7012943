package protocol

import (
	"errors"
	"io"
	"sync"
)

// DefaultWriteBufferSize is the pending-buffer bound used by [NewWriter]
// when bufSize <= 0.
const DefaultWriteBufferSize = 64 << 10

// ErrWriterClosed is returned by [Writer.Write] after [Writer.Close].
var ErrWriterClosed = errors.New("sluice/protocol: writer closed")

// Writer is a coalescing frame writer for one connection, safe for
// concurrent use by many goroutines.
//
// Write copies an encoded frame into a pending buffer under a short mutex
// and returns; a single flusher goroutine owned by the Writer hands
// everything pending to the underlying io.Writer in one Write call per
// batch. While a batch is being written, frames from other goroutines
// accumulate and go out together in the next batch, so concurrent
// responders share few system calls. Frames are never split or
// interleaved; frames from one goroutine keep their order.
//
// The pending buffer is bounded: a Write that would grow it beyond bufSize
// blocks until the flusher has taken the pending batch (a single frame
// larger than bufSize is accepted when nothing is pending). At most one
// batch is being written while the next one fills, so the Writer holds
// about 2*bufSize bytes. In steady state Write does not allocate.
//
// Write returning nil means the frame was queued, not that it was
// written. After the underlying io.Writer fails (or writes short), pending
// frames are dropped and every Write and Close returns that error. Close
// flushes what is pending, stops the flusher and returns the first write
// error; it does not close the underlying io.Writer.
type Writer struct {
	w     io.Writer
	limit int

	mu      sync.Mutex
	data    sync.Cond // the flusher waits here for pending frames or Close
	space   sync.Cond // writers wait here for pending space
	pending []byte
	spare   []byte // the buffer of the batch in flight, recycled
	idle    bool   // the flusher is waiting on data
	final   bool   // WriteFinal queued the last frame: later Writes fail
	closed  bool
	err     error
	done    chan struct{} // closed when the flusher returns
}

// NewWriter returns a Writer writing batches to w, bounding pending frames
// to bufSize bytes (DefaultWriteBufferSize if bufSize <= 0), and starts its
// flusher goroutine. Call Close to stop it.
func NewWriter(w io.Writer, bufSize int) *Writer {
	if bufSize <= 0 {
		bufSize = DefaultWriteBufferSize
	}
	fw := &Writer{
		w:       w,
		limit:   bufSize,
		pending: make([]byte, 0, bufSize),
		spare:   make([]byte, 0, bufSize),
		done:    make(chan struct{}),
	}
	fw.data.L = &fw.mu
	fw.space.L = &fw.mu
	go fw.flush()
	return fw
}

// Write queues frame, an already encoded header and payload, for writing.
// frame is copied; the caller may reuse it when Write returns. Write
// blocks while the pending buffer is full. It returns the underlying write
// error if one occurred, or ErrWriterClosed after Close.
func (w *Writer) Write(frame []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	for w.err == nil && !w.closed && !w.final && len(w.pending) > 0 && len(w.pending)+len(frame) > w.limit {
		w.space.Wait()
	}
	return w.queueLocked(frame, false)
}

// WriteNoWait queues frame like Write but never waits for pending space:
// the frame is accepted beyond the bound. It is for a few small control
// frames (a GoAway) that must not block their sender, Stop say, behind a
// peer that does not read; the bound holds for everything else.
func (w *Writer) WriteNoWait(frame []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.queueLocked(frame, false)
}

// WriteFinal queues frame as the last one: frames queued before it are
// written before it, and every later Write returns ErrWriterClosed (a
// connection-level Error is the last frame a peer gets). It does not wait
// for pending space: the frame is accepted whatever is pending, so that
// the last word is never lost to a full buffer. Close still flushes it.
func (w *Writer) WriteFinal(frame []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.queueLocked(frame, true)
}

// queueLocked appends frame to the pending batch and wakes the flusher,
// or returns the write error, or ErrWriterClosed after Close or a final
// frame. final makes frame the last one: writers blocked on space are
// woken to fail. w.mu held.
func (w *Writer) queueLocked(frame []byte, final bool) error {
	if err := w.err; err != nil {
		return err
	}
	if w.closed || w.final {
		return ErrWriterClosed
	}
	w.pending = append(w.pending, frame...)
	if final {
		w.final = true
		w.space.Broadcast()
	}
	if w.idle {
		w.data.Signal()
	}
	return nil
}

// Close writes all pending frames, stops the flusher goroutine and returns
// the first error of the underlying writer, if any. Writes blocked on a
// full buffer return ErrWriterClosed. Close is idempotent.
func (w *Writer) Close() error {
	w.mu.Lock()
	if !w.closed {
		w.closed = true
		w.data.Signal()
		w.space.Broadcast()
	}
	w.mu.Unlock()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// flush is the flusher goroutine.
func (w *Writer) flush() {
	defer close(w.done)
	w.mu.Lock()
	defer w.mu.Unlock()
	for {
		for len(w.pending) == 0 && !w.closed {
			w.idle = true
			w.data.Wait()
			w.idle = false
		}
		if len(w.pending) == 0 { // closed and drained
			return
		}
		batch := w.pending
		w.pending, w.spare = w.spare[:0], nil
		w.space.Broadcast()
		w.mu.Unlock()

		n, err := w.w.Write(batch)
		if err == nil && n < len(batch) {
			err = io.ErrShortWrite
		}

		w.mu.Lock()
		w.spare = batch[:0]
		if err != nil {
			w.err = err
			w.pending = w.pending[:0]
			w.space.Broadcast()
			return
		}
	}
}
