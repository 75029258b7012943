package protocol

import "sync"

// batchBuf is a Writer's batch buffer, pooled across Writers so that an
// idle Writer holds none.
type batchBuf struct{ b []byte }

// maxPooledBatch keeps buffers grown by very large frames out of the pool.
const maxPooledBatch = 2 * DefaultWriteBufferSize

// firstBatchSize is the capacity of a new batch buffer: most batches are
// a few small frames; append grows it for larger ones.
const firstBatchSize = 4 << 10

var batchBufs = sync.Pool{New: func() any { return &batchBuf{b: make([]byte, 0, firstBatchSize)} }}

func getBatchBuf() *batchBuf { return batchBufs.Get().(*batchBuf) }

// putBatchBuf returns b (which may be nil) to the pool and returns nil.
func putBatchBuf(b *batchBuf) *batchBuf {
	if b != nil && cap(b.b) <= maxPooledBatch {
		b.b = b.b[:0]
		batchBufs.Put(b)
	}
	return nil
}
