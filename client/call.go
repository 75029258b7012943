package client

import (
	"sync"

	"github.com/sluicerpc/sluice/codecs"
	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/spi"
)

// call is the state of one call, reused across its attempts and pooled
// across calls, so that a call allocates neither its wake-up channel nor
// its frame buffer.
//
// Completion is exactly-once: whoever removes the call's id from its
// connection's table (the reader on a Response or Error, the reader or a
// GoAway failing the connection's calls, or the caller abandoning the call
// on a cancelled context) owns the completion. Every party but the caller
// completes it with complete, which sends once on done; the caller receives
// that value before the call can go back to the pool.
type call struct {
	id   uint64        // request id of the current attempt
	done chan struct{} // capacity 1: one completion per attempt

	// Results of the current attempt, written by the completer before it
	// sends on done, read by the caller after it received.
	body []byte // response body, owned by the call
	err  error
	out  outcome

	frame []byte           // the encoded request frame (then the Cancel frame)
	req   protocol.Request // scratch for AppendRequest
	md    callMetadata     // request metadata; where response metadata goes

	// Request compression (compress_request.go), set by invoke and kept
	// across the call's attempts: policy decides, zbuf holds the
	// compressed body, made for the codec at position zidx-1 of the
	// client's list within zroom bytes (zidx 0: nothing made yet), and
	// zok says whether it was worth sending.
	policy codecs.Policy
	zbuf   []byte
	zidx   int
	zroom  int
	zok    bool

	// A compressed response (decode_response.go), handed over by the
	// reader like body: raw is a copy of its compressed bytes, to be
	// decoded by the caller with rcodec into exactly declared bytes.
	// rcodec is nil when the answer was not a compressed response.
	raw      []byte
	rcodec   spi.Codec
	declared int
}

// callPool holds a Client's idle calls. Each Client has its own, so that
// a call, and the channel it carries, only ever serves the goroutines of
// the program part that uses that Client (a testing/synctest bubble, for
// instance, whose channels may not be used from outside it).
type callPool struct{ p sync.Pool }

// maxPooledBuffer keeps very large buffers out of the pool.
const maxPooledBuffer = 64 << 10

func (cp *callPool) get() *call {
	if cl, ok := cp.p.Get().(*call); ok {
		return cl
	}
	return &call{done: make(chan struct{}, 1)}
}

func (cp *callPool) put(cl *call) {
	cl.id, cl.err, cl.out = 0, nil, outcomeSuccess
	cl.req = protocol.Request{}
	cl.md.reset()
	cl.policy, cl.zidx, cl.zroom, cl.zok = codecs.Policy{}, 0, 0, false
	cl.rcodec, cl.declared = nil, 0
	if cap(cl.body) > maxPooledBuffer {
		cl.body = nil
	}
	if cap(cl.frame) > maxPooledBuffer {
		cl.frame = nil
	}
	if cap(cl.zbuf) > maxPooledBuffer {
		cl.zbuf = nil
	}
	if cap(cl.raw) > maxPooledBuffer {
		cl.raw = nil
	}
	cl.body, cl.zbuf, cl.raw = cl.body[:0], cl.zbuf[:0], cl.raw[:0]
	cp.p.Put(cl)
}

// completeBody completes the attempt with a response body, copied into the
// call's own buffer.
func (cl *call) completeBody(body []byte) {
	cl.body = append(cl.body[:0], body...)
	cl.err, cl.out = nil, outcomeSuccess
	cl.done <- struct{}{}
}

// completeCompressed completes the attempt with a compressed response
// body that codec is to decode into exactly declared bytes: its compressed
// bytes are copied into the call's own buffer, and the caller decodes them
// (call.decode), under its own context, off the reader goroutine.
func (cl *call) completeCompressed(codec spi.Codec, declared int, data []byte) {
	cl.raw = append(cl.raw[:0], data...)
	cl.rcodec, cl.declared = codec, declared
	cl.err, cl.out = nil, outcomeSuccess
	cl.done <- struct{}{}
}

// complete completes the attempt with an error.
func (cl *call) complete(out outcome, err error) {
	cl.err, cl.out = err, out
	cl.done <- struct{}{}
}
