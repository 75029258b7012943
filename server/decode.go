package server

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/sluicerpc/sluice/kernel/governor"
	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/spi"
)

// Reasons of the governor's refusals (protocol.ErrorFrame.Reason, and
// keys of Stats.Refusals): the budget that was short.
const (
	ReasonRetainedBytes = "retained_bytes"
	ReasonDecodedBytes  = "decoded_bytes"
)

// checkBody is the cheap validation of a compressed request's envelope,
// on the reader before anything is captured or reserved: the codec id
// names a profile this server accepts, and the declared length is within
// the decode bounds (Options.Compression). It returns the codec, or the
// Error frame that refuses the call.
func (c *conn) checkBody(req *protocol.Request) (spi.Codec, *protocol.ErrorFrame) {
	codecs := c.codecs
	if req.CodecID == 0 || int(req.CodecID) > len(codecs) {
		f := protocol.ErrorFrame{Code: protocol.CodeInvalidArgument,
			Message: fmt.Sprintf("unknown codec id %d: the HandshakeAck of this connection lists %d profiles (ids 1..%d)", req.CodecID, len(codecs), len(codecs))}
		if len(codecs) == 0 {
			f.Message = fmt.Sprintf("unknown codec id %d: this connection negotiated no compression", req.CodecID)
		}
		return nil, &f
	}
	codec := codecs[req.CodecID-1]
	cp := c.s.comp.Load()
	if _, _, ok := cp.res.Lookup(codec.Name()); !ok {
		return nil, &protocol.ErrorFrame{Code: protocol.CodeInvalidArgument,
			Message: fmt.Sprintf("compressed request: profile %q is no longer accepted by this server (its compression configuration changed after this connection's handshake)", codec.Name())}
	}
	if err := cp.res.CheckDeclared(uint64(req.OriginalLength), len(req.Body)); err != nil {
		return nil, &protocol.ErrorFrame{Code: protocol.CodeResourceExhausted, Message: "compressed request: " + err.Error()}
	}
	return codec, nil
}

// retain takes the retained-bytes budget for a compressed request's copy,
// which the call holds until it is decoded (while it is queued, too).
func (cl *call) retain() *protocol.ErrorFrame {
	if !cl.compressed {
		return nil
	}
	if !cl.gov.Take(cl.c.s.governor, governor.PartRetained, int64(len(cl.c.req.Body))) {
		return &protocol.ErrorFrame{Code: protocol.CodeResourceExhausted,
			Message: "server busy: the retained compressed bytes budget is full", Reason: ReasonRetainedBytes}
	}
	return nil
}

// decode decompresses a compressed request body, after the call
// reservation and before activation, in the call's goroutine: it takes
// the decoded-bytes budget (the declared length, held until the call
// ends), waits for a decode credit (in arrival order, while the call's
// context lives), decodes with the declared length as the exact limit,
// then gives back the credit and the retained bytes. An uncompressed body
// passes through. It returns nil when the call may go on, or the answer
// that ends it (the drop reason is for Stats).
func (cl *call) decode() (*protocol.ErrorFrame, dropReason) {
	if !cl.compressed {
		cl.body = cl.req.Body
		return nil, 0
	}
	out, err := cl.c.s.governedDecode(cl.ctx, &cl.gov, cl.codec, cl.decoded[:0], cl.req.Body, int(cl.req.OriginalLength))
	cl.gov.Give(governor.PartRetained, cl.gov.Held(governor.PartRetained))
	if out != nil {
		cl.decoded = out[:0]
	}
	var waited errDecodeWait
	switch {
	case errors.Is(err, errDecodedBudget):
		return &protocol.ErrorFrame{Code: protocol.CodeResourceExhausted,
			Message: errDecodedBudget.Error(), Reason: ReasonDecodedBytes}, dropDecoded
	case errors.As(err, &waited):
		f := cl.contextFrame()
		return &f, dropCanceled
	case err != nil:
		return cl.decodeFailure(err), dropDecodeFailed
	}
	if cl.ctx.Err() != nil {
		// Cancelled (or out of time) during a decode too short to
		// check: the handler does not run for nothing.
		f := cl.contextFrame()
		return &f, dropCanceled
	}
	cl.body = out
	return nil, 0
}

// decodeFailure is the answer to a decode that failed: the context's end,
// a body that is not what it declares, or a codec's own failure.
func (cl *call) decodeFailure(err error) *protocol.ErrorFrame {
	name := cl.codec.Name()
	var f protocol.ErrorFrame
	switch {
	case cl.ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)):
		f = cl.contextFrame()
	case errors.Is(err, spi.ErrDecodedTooLarge):
		f = protocol.ErrorFrame{Code: protocol.CodeInvalidArgument,
			Message: fmt.Sprintf("compressed request: the %s body inflates past its declared length %d", name, cl.req.OriginalLength)}
	case errors.Is(err, spi.ErrCorrupt):
		f = protocol.ErrorFrame{Code: protocol.CodeInvalidArgument, Message: clip("compressed request: " + err.Error())}
	default:
		f = protocol.ErrorFrame{Code: protocol.CodeInternal, Message: clip(fmt.Sprintf("compressed request: the %s codec failed: %v", name, err))}
	}
	return &f
}

// chooseCodecs keeps the profiles of the client's offer that this server
// accepts, in the client's order of preference (each once): the
// connection's HandshakeAck lists them, requests name them by position,
// and the first compresses responses. A client that offered nothing, or
// nothing this server accepts, negotiates no compression.
func (c *conn) chooseCodecs(offer []string) {
	comp := c.s.comp.Load()
	for _, name := range offer {
		cd, _, ok := comp.res.Lookup(name)
		if !ok || slices.ContainsFunc(c.codecs, func(have spi.Codec) bool { return have.Name() == name }) {
			continue
		}
		c.codecs = append(c.codecs, cd)
	}
	if len(c.codecs) > 0 {
		c.respCodec, c.respCodecID = c.codecs[0], 1
	}
}
