package server

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/sluicerpc/sluice/kernel"
	"github.com/sluicerpc/sluice/kernel/governor"
	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/spi"
)

// call is one request in flight: the per-call storage that holds its
// admission permit and capacity reservation (so the immediate path
// allocates neither), its context, and its buffers. Calls are pooled.
type call struct {
	c      *conn
	id     uint64
	m      *method
	oneWay bool

	ctx    context.Context // callCtx, wrapping the cancel or timer context
	cancel context.CancelFunc
	cctx   callCtx

	start time.Time // when its request arrived, with metrics (else zero)

	permit   kernel.Permit
	admitted bool // Capture succeeded: the permit must be released
	// ran is set when the handler is about to run: until then the call is
	// unused, and its release gives back the rate quota it took (a
	// refused request consumes no quota anywhere).
	ran bool
	// gov is everything the call holds from the governor: its call
	// reservation, and for a compressed request its retained bytes,
	// decode credit and decoded bytes.
	gov governor.Holding

	// A compressed request's codec, and its decoded body (pooled with
	// the call); body is what the handler gets: the request's body, or
	// its decoded form.
	compressed bool
	codec      spi.Codec
	decoded    []byte
	body       []byte
	zout       []byte // a compressed response body

	st *Stream // a stream call's stream; nil for a unary call

	payload []byte           // the request payload, copied off the reader
	charge  int64            // MaxFrameMemory bytes a large payload holds
	req     protocol.Request // parsed from payload: Body and Metadata alias it
	out     []byte           // response frame: header room, then the body
	md      callMetadata     // response metadata; guards request metadata views
}

// reasonDraining marks a request refused because its connection drains:
// like every refusal with a reason, it never ran.
const reasonDraining = "draining"

var callPool = sync.Pool{New: func() any { return new(call) }}

// maxPooledBuffer keeps very large buffers out of the pool.
const maxPooledBuffer = 64 << 10

// onRequest handles a Request frame on the reader goroutine: parse,
// capture, admit (without blocking), reserve, copy the payload, and hand
// the call to its own goroutine. It returns an error only for a protocol
// violation, which ends the connection; every other refusal is answered
// on the call and the connection stays usable.
func (c *conn) onRequest(h protocol.Header, payload []byte) error {
	if err := c.ids.Accept(h.ID); err != nil {
		return err
	}
	c.reqStart = c.s.metrics.now()
	req := &c.req
	if err := protocol.ParseRequest(h, payload, c.lim, req); err != nil {
		if c.refuseMetadata(h, req, err) {
			return c.refusedStreamOpening(req)
		}
		return err
	}
	c.lastID.Store(h.ID)
	s := c.s
	opened := false // a stream request became a stream
	if req.Stream {
		if !c.streaming {
			return errStreamsNotNegotiated
		}
		// The opening message counts against the connection's window
		// like any message; a stream refused below returns it at once.
		n, err := c.chargeOpening(req)
		if err != nil {
			return err
		}
		if n > 0 {
			defer func() {
				if !opened {
					c.dropConnBytes(n)
				}
			}()
		}
	}
	switch {
	case c.draining.Load():
		c.refuse(h.ID, req.OneWay, protocol.ErrorFrame{Code: protocol.CodeUnavailable, Message: "server stopping", Reason: reasonDraining}, dropDraining)
		return nil
	case int(req.Service) >= len(s.methods) || int(req.Method) >= len(s.methods[req.Service]):
		c.refuse(h.ID, req.OneWay, protocol.ErrorFrame{Code: protocol.CodeUnimplemented, Message: "unknown method"}, dropUnknown)
		return nil
	}
	var codec spi.Codec
	if req.Compressed {
		var f *protocol.ErrorFrame
		if codec, f = c.checkBody(req); f != nil {
			c.refuse(h.ID, req.OneWay, *f, dropInvalidBody)
			return nil
		}
	}
	m := &s.methods[req.Service][req.Method]
	if req.Stream != (m.kind != kindUnary) {
		c.refuse(h.ID, req.OneWay, shapeRefusal(m, req.Stream), dropUnknown)
		return nil
	}
	if req.Stream {
		if f := streamOpeningRefusal(m, req); f != nil {
			c.refuse(h.ID, false, *f, dropInvalidBody)
			return nil
		}
	}

	cl := callPool.Get().(*call)
	cl.c, cl.id, cl.m, cl.oneWay = c, h.ID, m, req.OneWay
	cl.gov.SetShare(c.share)
	cl.compressed, cl.codec = req.Compressed, codec
	cl.start = c.reqStart
	var ctx context.Context
	if req.HasBudget {
		ctx, cl.cancel = context.WithTimeout(c.ctx, req.Budget)
	} else {
		ctx, cl.cancel = context.WithCancel(c.ctx)
	}
	cl.cctx = callCtx{Context: ctx, cl: cl}
	cl.ctx = &cl.cctx

	// Capture once; this program decides admission, queueing and release.
	queued := false
	if s.kernel.Capture(&cl.permit) {
		cl.admitted = true
		if hk := s.hooks.Load(); hk != nil && hk.afterCapture != nil {
			hk.afterCapture(cl.permit.Generation())
		}
		kreq := kernel.Request{Method: m.id, OneWay: req.OneWay, Bytes: int64(len(payload)), Conn: c.id, Identity: c.peer.Identity}
		if req.Metadata.Len() > 0 {
			kreq.Metadata = metadataView{&req.Metadata}
		}
		switch err := cl.permit.Start(cl.ctx, kreq); {
		case err == nil:
		case errors.Is(err, kernel.ErrQueued):
			queued = true
		default:
			f, drop := admissionRefusal(&cl.permit, err)
			cl.release()
			c.refuse(h.ID, req.OneWay, f, drop)
			return nil
		}
	}
	if queued {
		s.stats.queued.Add(1)
	} else {
		s.stats.granted.Add(1)
	}
	if !queued {
		if ok, level := c.reserveCall(cl); !ok {
			cl.release()
			c.refuse(h.ID, req.OneWay, capacityRefusal(level), dropCapacity)
			return nil
		}
	}
	if f := cl.retain(); f != nil {
		cl.release()
		c.refuse(h.ID, req.OneWay, *f, dropRetained)
		return nil
	}

	// The call leaves the reader: it keeps its own copy of the payload (a
	// queued call keeps it charged to MaxQueuedBytes), parsed again (about
	// 100 ns) so that its body and metadata alias the copy. Copying only
	// here keeps every refusal above free of the copy.
	cl.payload = append(cl.payload[:0], payload...)
	cl.charge = c.rd.TakeCharge()
	if err := protocol.ParseRequest(h, cl.payload, c.lim, &cl.req); err != nil {
		panic("server: a request that parsed once does not parse again: " + err.Error())
	}
	if req.Stream {
		if err := cl.openStream(); err != nil {
			panic("server: a fresh stream refused its opening message: " + err.Error())
		}
		opened = true
	} else if req.Cancellable {
		c.mu.Lock()
		c.calls[h.ID] = cl
		c.mu.Unlock()
	}
	c.active.Add(1)
	c.inflight.Add(1)
	s.stats.calls.Add(1)
	go cl.run(queued)
	return nil
}

// run is the call's goroutine: the rest of admission for a queued call,
// reserve, decode, activate, the handler, the answer and the release.
func (cl *call) run(queued bool) {
	defer cl.finish()
	c, s := cl.c, cl.c.s
	if queued {
		err := cl.permit.Wait(cl.ctx)
		if err == nil {
			s.stats.granted.Add(1)
		}
		if hk := s.hooks.Load(); err == nil && hk != nil && hk.afterGrant != nil {
			hk.afterGrant(cl.ctx)
		}
		if err == nil && c.ctx.Err() != nil {
			// Granted a unit that the connection's end freed (another of
			// its calls, cancelled a moment before this one): the client
			// is gone, the call never runs and gives its grant back.
			cl.release()
			err = c.ctx.Err()
		}
		if err != nil {
			f, drop := admissionRefusal(&cl.permit, err)
			if f.Code == protocol.CodeCanceled || f.Code == protocol.CodeDeadlineExceeded {
				f = cl.contextFrame()
			}
			if cl.st != nil {
				if sf, sd := cl.st.refusal(); sf != nil {
					f, drop = *sf, sd // the stream's messages ended the wait
				}
			}
			if m := s.metrics; m != nil {
				m.dequeued(cl.start, outcomeOf(drop))
			}
			cl.refuse(cl.oneWay, f, drop)
			return
		}
		if m := s.metrics; m != nil {
			m.dequeued(cl.start, queueGranted)
		}
		if ok, level := c.reserveCall(cl); !ok {
			cl.refuse(cl.oneWay, capacityRefusal(level), dropCapacity)
			return
		}
	}
	// Decode, after the reservation and before activation: a request
	// refused above cost no decompression and no decoded buffer. (A
	// stream's messages, its first one included, are decoded by its
	// Receive.)
	if cl.st == nil {
		if f, drop := cl.decode(); f != nil {
			cl.refuse(cl.oneWay, *f, drop)
			return
		}
	}
	if !cl.gov.Call.Activate() {
		return
	}
	cl.out = append(cl.out[:0], make([]byte, protocol.HeaderSize)...)
	if cl.st != nil {
		if f, drop := cl.st.admit(); f != nil {
			cl.refuse(false, *f, drop)
			return
		}
	}
	cl.ran = true
	if cl.st != nil {
		err := cl.invokeStream()
		cl.releaseAdmission()
		cl.st.end(err)
		cl.st.dropLast() // the handler returned: its last message is no longer used
		if s.metrics != nil {
			cl.observe(cl.codeOf(err), -1) // after the answer: off the call's latency
		}
		return
	}
	out, err := cl.invoke()
	cl.releaseAdmission()
	if cl.oneWay {
		if err != nil {
			s.stats.oneWayErrors.Add(1)
		}
		if s.metrics != nil {
			cl.observe(cl.codeOf(err), -1)
		}
		return
	}
	if err == nil && cl.ctx.Err() != nil {
		err = cl.ctx.Err()
	}
	if err != nil {
		f := cl.handlerErrorFrame(err)
		c.writeError(cl.id, &f)
		cl.observe(f.Code, -1)
		return
	}
	body := len(out) - protocol.HeaderSize
	if cl.md.resp.Len() > 0 || (c.respCodec != nil && c.s.comp.Load().policies[cl.m.pos].Budget(body) > 0) {
		cl.respond(out)
		cl.out = out
		return
	}
	if uint64(body) > uint64(c.peerMax) {
		f := protocol.ErrorFrame{Code: protocol.CodeResourceExhausted, Message: "the response exceeds the client's maximum frame size"}
		c.writeError(cl.id, &f)
		cl.observe(f.Code, -1)
		return
	}
	protocol.AppendHeader(out[:0], protocol.Header{Type: protocol.FrameResponse, Length: uint32(body), ID: cl.id})
	cl.out = out
	_ = c.w.Write(out)
	cl.observe(protocol.CodeOK, body) // after the answer: off the call's latency
}

// invoke runs the handler, turning a panic into an Internal error.
func (cl *call) invoke() (out []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			cl.c.s.stats.panics.Add(1)
			f := panicFrame(r)
			out, err = cl.out, &panicError{f}
		}
	}()
	return cl.m.invoke(cl.ctx, cl.body, cl.out)
}

// contextFrame is the answer to a call whose context ended: Canceled
// after a Cancel frame or a closed connection, DeadlineExceeded when the
// budget ran out.
func (cl *call) contextFrame() protocol.ErrorFrame {
	if errors.Is(cl.ctx.Err(), context.DeadlineExceeded) {
		return protocol.ErrorFrame{Code: protocol.CodeDeadlineExceeded, Message: "the call's time budget ran out"}
	}
	return protocol.ErrorFrame{Code: protocol.CodeCanceled, Message: "call cancelled"}
}

// finish releases everything the call holds, exactly once, and returns it
// to the pool.
func (cl *call) finish() {
	c := cl.c
	c.mu.Lock()
	if c.calls[cl.id] == cl {
		delete(c.calls, cl.id)
	}
	c.mu.Unlock()
	if cl.st != nil {
		cl.st.release()
		cl.st = nil
	}
	cl.release()
	c.callDone()
	cl.recycle()
}

// release gives back the permit and the capacity reservation and ends the
// call's context; each at most once. A permit whose handler never ran is
// released unused: its rate quota is given back too.
func (cl *call) release() {
	cl.releaseAdmission()
	cl.gov.Release()
	if cl.charge > 0 {
		cl.c.s.frameBudget.Release(cl.charge)
		cl.charge = 0
	}
	cl.cancel()
}

// handlerErrorFrame is the Error frame answering a handler's (or a
// stream's) failure err: a panic's Internal, the call's own cancel or
// deadline for a context error, the status err carries otherwise; with
// the response metadata as its trailers.
func (cl *call) handlerErrorFrame(err error) protocol.ErrorFrame {
	f := errorFrameOf(err)
	var pe *panicError
	switch {
	case errors.As(err, &pe):
		f = pe.f
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		f = cl.contextFrame()
	}
	cl.withResponseMetadata(&f)
	return f
}

// releaseAdmission gives back the permit and the call-capacity
// reservation, each at most once. A call that ran does it as soon as its
// handler returned, before its answer is written: a client that sends its
// next call on receiving the answer finds the capacity free (with a
// per-connection capacity of 1, a sequential client was refused
// call_capacity when its next request overtook the release).
func (cl *call) releaseAdmission() {
	if cl.admitted {
		if cl.ran {
			cl.permit.Release()
		} else {
			cl.permit.ReleaseUnused()
		}
		cl.admitted, cl.ran = false, false
	}
	cl.gov.Call.Release()
}

func (cl *call) recycle() {
	cl.gov.Reset()
	cl.c, cl.m, cl.ctx, cl.cancel, cl.cctx = nil, nil, nil, nil, callCtx{}
	cl.compressed, cl.codec, cl.body = false, nil, nil
	if cap(cl.decoded) > maxPooledBuffer {
		cl.decoded = nil
	}
	if cap(cl.zout) > maxPooledBuffer {
		cl.zout = nil
	}
	cl.ran = false
	cl.req = protocol.Request{Metadata: cl.req.Metadata}
	cl.req.Metadata.Reset()
	cl.md.reset()
	if cap(cl.payload) > maxPooledBuffer {
		cl.payload = nil
	}
	if cap(cl.out) > maxPooledBuffer {
		cl.out = nil
	}
	callPool.Put(cl)
}

// panicError carries the Internal frame of a handler panic.
type panicError struct{ f protocol.ErrorFrame }

func (e *panicError) Error() string { return e.f.Message }

// refuse answers a call that will not run: an Error frame, or for a
// one-way call a counted drop.
//
// It runs on the reader only (the request it refuses is c.req, which
// arrived at c.reqStart); a call's own goroutine refuses with call.refuse.
func (c *conn) refuse(id uint64, oneWay bool, f protocol.ErrorFrame, drop dropReason) {
	c.answerRefusal(id, oneWay, f, drop)
	if m := c.s.metrics; m != nil {
		m.call(c.s.methodOf(&c.req), f.Code, c.reqStart, -1, -1)
	}
}

// refuse answers cl's request, refused on its own goroutine (after its
// queue wait, or by its decode or its stream's admission).
func (cl *call) refuse(oneWay bool, f protocol.ErrorFrame, drop dropReason) {
	cl.c.answerRefusal(cl.id, oneWay, f, drop)
	if m := cl.c.s.metrics; m != nil {
		m.call(cl.m, f.Code, cl.start, -1, -1)
	}
}

// answerRefusal counts a refusal and answers it (a one-way call gets no
// answer).
func (c *conn) answerRefusal(id uint64, oneWay bool, f protocol.ErrorFrame, drop dropReason) {
	c.s.stats.refused(drop)
	if oneWay {
		c.s.stats.oneWayDropped.Add(1)
		return
	}
	c.writeError(id, &f)
}

// writeError writes an Error frame for call id.
func (c *conn) writeError(id uint64, f *protocol.ErrorFrame) {
	buf := errorBufs.Get().(*[]byte)
	frame, err := protocol.AppendError((*buf)[:0], id, f)
	if err != nil {
		// Only an invalid reason could do this: send it without.
		f2 := *f
		f2.Reason = ""
		frame, _ = protocol.AppendError((*buf)[:0], id, &f2)
	}
	_ = c.w.Write(frame)
	*buf = frame
	errorBufs.Put(buf)
}

var errorBufs = sync.Pool{New: func() any { b := make([]byte, 0, 256); return &b }}

// metadataView adapts the request's metadata to kernel.Metadata for
// partition selectors; it is used only while the reader admits the call.
type metadataView struct{ m *protocol.Metadata }

func (v metadataView) Get(key string) (string, bool) {
	b, ok := v.m.Get(key)
	return string(b), ok
}

// reserveCall takes cl's call-capacity reservation on the connection and
// the server, unless the server is nearly full and this connection holds
// its fair share already (governor.ConnCapacities.OverShare): a few
// connections cannot keep every other one out by holding all of the
// server's calls.
func (c *conn) reserveCall(cl *call) (bool, governor.CapacityLevel) {
	if c.s.connCaps.OverShare(c.caps, c.s.calls) {
		return false, governor.LevelShare
	}
	return cl.gov.Call.Reserve(c.caps, c.s.calls)
}
