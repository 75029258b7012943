package protocol

import (
	"context"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"time"
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
	w       io.Writer
	limit   int
	timeout time.Duration
	onError func(error)

	mu      sync.Mutex
	data    sync.Cond // the flusher waits here for pending frames or Close
	space   sync.Cond // writers wait here for pending space
	pending *batchBuf // nil while the flusher is idle with nothing pending
	spare   *batchBuf // the buffer of the batch in flight, recycled
	waiting int       // writers blocked on space
	idle    bool      // the flusher is waiting on data
	final   bool      // WriteFinal queued the last frame: later Writes fail
	closed  bool
	err     error
	done    chan struct{} // closed when the flusher returns

	// saturated is set while the unsent frames reach the bound: pending
	// bytes at the limit, or a writer waiting for space. Readers of the
	// connection poll it without the lock (Saturated).
	saturated atomic.Bool
}

// WriterConfig configures [NewWriterConfig]; the zero value of each field
// selects its default.
type WriterConfig struct {
	// BufferSize bounds the pending bytes (DefaultWriteBufferSize when
	// <= 0).
	BufferSize int

	// WriteTimeout, when positive and the underlying writer has a
	// SetWriteDeadline method (a net.Conn), bounds each write to it: a
	// write that makes no progress for this long fails with the
	// deadline's error, which then fails the Writer. Batches larger than
	// BufferSize are written in pieces, each with a fresh deadline, so a
	// slow but live peer is not mistaken for a dead one.
	WriteTimeout time.Duration

	// OnError, when not nil, is called once, on the flusher goroutine,
	// with the first error of the underlying writer (a timeout
	// included), after the Writer has failed. It must not block for
	// long; closing the connection is its typical use.
	OnError func(error)
}

// NewWriter returns a Writer writing batches to w, bounding pending frames
// to bufSize bytes (DefaultWriteBufferSize if bufSize <= 0), and starts its
// flusher goroutine. Call Close to stop it.
func NewWriter(w io.Writer, bufSize int) *Writer {
	return NewWriterConfig(w, WriterConfig{BufferSize: bufSize})
}

// NewWriterConfig returns a Writer writing batches to w as cfg says and
// starts its flusher goroutine. Call Close to stop it.
//
// The Writer holds no buffer while it is idle: its batch buffers come
// from a pool shared by every Writer when a frame is queued and return to
// it when the flusher has written everything, so an idle connection costs
// the Writer struct and its goroutine only.
func NewWriterConfig(w io.Writer, cfg WriterConfig) *Writer {
	if cfg.BufferSize <= 0 {
		cfg.BufferSize = DefaultWriteBufferSize
	}
	fw := &Writer{
		w:       w,
		limit:   cfg.BufferSize,
		timeout: cfg.WriteTimeout,
		onError: cfg.OnError,
		done:    make(chan struct{}),
	}
	fw.data.L = &fw.mu
	fw.space.L = &fw.mu
	go fw.flush()
	return fw
}

// Saturated reports, without locking, whether the frames not yet handed
// to the underlying writer reach the bound: the pending bytes are at the
// limit or a Write waits for space. A connection's reader checks it before
// reading another request, so that a peer that does not read stops being
// read (backpressure on that connection only).
func (w *Writer) Saturated() bool { return w.saturated.Load() }

// WaitUnsaturated blocks until [Writer.Saturated] would report false, or
// the Writer failed or was closed (then it returns that error, or
// ErrWriterClosed).
func (w *Writer) WaitUnsaturated() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	for w.err == nil && !w.closed && w.saturatedLocked() {
		w.space.Wait()
	}
	if w.err != nil {
		return w.err
	}
	if w.closed {
		return ErrWriterClosed
	}
	return nil
}

func (w *Writer) saturatedLocked() bool {
	return w.waiting > 0 || (w.pending != nil && len(w.pending.b) >= w.limit)
}

// updateSaturatedLocked publishes saturatedLocked; w.mu held.
func (w *Writer) updateSaturatedLocked() {
	if s := w.saturatedLocked(); s != w.saturated.Load() {
		w.saturated.Store(s)
	}
}

// pendingLen is the number of pending bytes; w.mu held.
func (w *Writer) pendingLen() int {
	if w.pending == nil {
		return 0
	}
	return len(w.pending.b)
}

// Write queues frame, an already encoded header and payload, for writing.
// frame is copied; the caller may reuse it when Write returns. Write
// blocks while the pending buffer is full. It returns the underlying write
// error if one occurred, or ErrWriterClosed after Close.
func (w *Writer) Write(frame []byte) error {
	return w.WriteContext(context.Background(), frame)
}

// ErrWouldBlock is returned by [Writer.TryWrite] when the frame does not
// fit the pending buffer: queueing it would have to wait for the flusher.
var ErrWouldBlock = errors.New("sluice/protocol: write would block: the peer is not draining the connection")

// WriteContext is Write bounded by ctx: while the pending buffer is full
// it waits for space until ctx is done, and then returns ctx's cause with
// the frame not queued (nothing of it is sent). A frame that fits is
// queued whatever ctx says.
func (w *Writer) WriteContext(ctx context.Context, frame []byte) error {
	w.mu.Lock()
	// Fast path: the frame fits the pending batch and nothing waits, so
	// the Writer can only become saturated by reaching its limit.
	if p := w.pending; p != nil && w.waiting == 0 && len(p.b)+len(frame) <= w.limit && w.err == nil && !w.closed && !w.final {
		p.b = append(p.b, frame...)
		if len(p.b) >= w.limit {
			w.saturated.Store(true)
		}
		if w.idle {
			w.data.Signal()
		}
		w.mu.Unlock()
		return nil
	}
	defer w.mu.Unlock()
	full := func() bool {
		return w.err == nil && !w.closed && !w.final && w.pendingLen() > 0 && w.pendingLen()+len(frame) > w.limit
	}
	if full() {
		if ctx.Done() != nil {
			// Wake the waiters when ctx ends, so that this one sees it.
			stop := context.AfterFunc(ctx, func() {
				w.mu.Lock()
				w.space.Broadcast()
				w.mu.Unlock()
			})
			defer stop()
		}
		w.waiting++
		w.updateSaturatedLocked()
		for full() && ctx.Err() == nil {
			w.space.Wait()
		}
		w.waiting--
		if full() {
			w.updateSaturatedLocked()
			return context.Cause(ctx)
		}
	}
	// A reader in WaitUnsaturated is woken by the flusher taking the
	// batch this frame joined.
	err := w.queueLocked(frame, false)
	w.updateSaturatedLocked()
	return err
}

// TryWrite queues frame like Write if it fits the pending buffer (or
// nothing is pending) and otherwise returns ErrWouldBlock at once, the
// frame not queued. It is for frames a goroutine that must never block
// can drop: a reader's Pong, a best-effort Cancel.
func (w *Writer) TryWrite(frame []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil && !w.closed && !w.final && w.pendingLen() > 0 && (w.waiting > 0 || w.pendingLen()+len(frame) > w.limit) {
		return ErrWouldBlock
	}
	err := w.queueLocked(frame, false)
	w.updateSaturatedLocked()
	return err
}

// WriteNoWait queues frame like Write but never waits for pending space:
// the frame is accepted beyond the bound. It is for a few small control
// frames (a GoAway) that must not block their sender, Stop say, behind a
// peer that does not read; the bound holds for everything else.
func (w *Writer) WriteNoWait(frame []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	err := w.queueLocked(frame, false)
	w.updateSaturatedLocked()
	return err
}

// WriteFinal queues frame as the last one: frames queued before it are
// written before it, and every later Write returns ErrWriterClosed (a
// connection-level Error is the last frame a peer gets). It does not wait
// for pending space: the frame is accepted whatever is pending, so that
// the last word is never lost to a full buffer. Close still flushes it.
func (w *Writer) WriteFinal(frame []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	err := w.queueLocked(frame, true)
	w.updateSaturatedLocked()
	return err
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
	if w.pending == nil {
		w.pending = getBatchBuf()
	}
	w.pending.b = append(w.pending.b, frame...)
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
		for w.pendingLen() == 0 && !w.closed {
			// Idle: the buffers go back to the pool.
			w.pending = putBatchBuf(w.pending)
			w.spare = putBatchBuf(w.spare)
			w.idle = true
			w.data.Wait()
			w.idle = false
		}
		if w.pendingLen() == 0 { // closed and drained
			w.pending = putBatchBuf(w.pending)
			w.spare = putBatchBuf(w.spare)
			return
		}
		batch := w.pending
		w.pending, w.spare = w.spare, nil
		if w.pending != nil {
			w.pending.b = w.pending.b[:0]
		}
		w.updateSaturatedLocked()
		w.space.Broadcast()
		w.mu.Unlock()

		err := w.writeBatch(batch.b)

		w.mu.Lock()
		batch.b = batch.b[:0]
		w.spare = batch
		if err != nil {
			w.err = err
			w.pending = putBatchBuf(w.pending)
			w.spare = putBatchBuf(w.spare)
			w.saturated.Store(false) // WaitUnsaturated reports w.err
			w.space.Broadcast()
			if f := w.onError; f != nil {
				w.mu.Unlock()
				f(err)
				w.mu.Lock()
			}
			return
		}
	}
}

// deadliner is what a net.Conn offers for write deadlines.
type deadliner interface{ SetWriteDeadline(time.Time) error }

// writeBatch hands batch to the underlying writer: in one Write, or,
// with a write timeout, in pieces of at most the buffer size, each under a
// fresh deadline.
func (w *Writer) writeBatch(batch []byte) error {
	dl, ok := w.w.(deadliner)
	if !ok || w.timeout <= 0 {
		n, err := w.w.Write(batch)
		if err == nil && n < len(batch) {
			err = io.ErrShortWrite
		}
		return err
	}
	for len(batch) > 0 {
		piece := batch[:min(len(batch), w.limit)]
		if err := dl.SetWriteDeadline(time.Now().Add(w.timeout)); err != nil {
			return err
		}
		n, err := w.w.Write(piece)
		if err == nil && n < len(piece) {
			err = io.ErrShortWrite
		}
		if err != nil {
			return err
		}
		batch = batch[len(piece):]
	}
	return nil
}
