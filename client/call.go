package client

import (
	"sync"

	"github.com/sluicerpc/sluice/protocol"
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
	if cap(cl.body) > maxPooledBuffer {
		cl.body = nil
	}
	if cap(cl.frame) > maxPooledBuffer {
		cl.frame = nil
	}
	cl.body = cl.body[:0]
	cp.p.Put(cl)
}

// completeBody completes the attempt with a response body, copied into the
// call's own buffer.
func (cl *call) completeBody(body []byte) {
	cl.body = append(cl.body[:0], body...)
	cl.err, cl.out = nil, outcomeSuccess
	cl.done <- struct{}{}
}

// complete completes the attempt with an error.
func (cl *call) complete(out outcome, err error) {
	cl.err, cl.out = err, out
	cl.done <- struct{}{}
}
