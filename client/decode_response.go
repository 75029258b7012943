package client

import (
	"context"
	"errors"

	"github.com/sluicerpc/sluice/codecs"
	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/protocol/status"
	"github.com/sluicerpc/sluice/spi"
)

// A compressed response is checked by the reader goroutine, cheaply and
// before anything is retained: its codec id must name a profile this
// client offered and the server accepted (else the call fails with
// Internal), and its declared original length must be within
// Options.Compression's bounds for its compressed size
// (Resolved.CheckDeclared; else ResourceExhausted). Only then are its
// compressed bytes copied to the call (call.completeCompressed), and the
// caller decodes them in its own goroutine (call.decode), under the call's
// context, with the declared length as the limit: a body that decodes to
// more or less than it declared, is corrupt or has trailing bytes fails the
// call with DataLoss, wrapping spi.ErrDecodedTooLarge or spi.ErrCorrupt.
// None of these closes the connection: a well-formed frame with a bad body
// is the call's failure, not a protocol violation.

// deliverCompressed hands a compressed response to cl, or fails cl when
// its codec id or declared length is refused. Called by the reader.
func (c *conn) deliverCompressed(cl *call, resp *protocol.Response) {
	codec := c.codecs.recvCodec(resp.CodecID)
	if codec == nil {
		cl.complete(outcomeRemoteError, c.unknownCodec(resp.CodecID))
		return
	}
	if err := c.client.cfg.comp.CheckDeclared(uint64(resp.OriginalLength), len(resp.Body)); err != nil {
		cl.complete(outcomeRemoteError, &bodyError{
			st:    status.Errorf(protocol.CodeResourceExhausted, "the server's %s response refused before decoding: %v", codec.Name(), err),
			cause: spi.ErrDecodedTooLarge,
		})
		return
	}
	cl.completeCompressed(codec, int(resp.OriginalLength), resp.Body)
}

// unknownCodec is the error of a response compressed with a codec id that
// names no profile this client offered and the server accepted.
func (c *conn) unknownCodec(id uint8) error {
	switch {
	case len(c.client.cfg.offer) == 0:
		return status.Errorf(protocol.CodeInternal, "the server sent a response compressed with codec id %d, but this client offered no codec (compression is off)", id)
	case int(id) > len(c.codecs.accepted):
		return status.Errorf(protocol.CodeInternal, "the server sent a response compressed with codec id %d, but its handshake accepted only %d profiles %q", id, len(c.codecs.accepted), c.codecs.accepted)
	default:
		return status.Errorf(protocol.CodeInternal, "the server sent a response compressed with codec id %d (%q), which this client did not offer (it offered %q)", id, c.codecs.accepted[id-1], c.client.cfg.offer)
	}
}

// decode decodes the compressed response the reader handed to cl
// (completeCompressed) into cl.body, under ctx (the call's context, checked
// by the codec at least every spi.DecodeQuantum bytes of output). The
// codec holds at most about the declared length of output: a bomb that
// declares little is refused as soon as it passes it. It returns the
// attempt's outcome: success, the context's error when ctx ended first, or
// a remote error for a body that is not what it declared. The decode
// holds its declared length of budget (the client's decodeBudget) while it
// runs; waiting for it ends with ctx too.
func (cl *call) decode(ctx context.Context, budget *decodeBudget) (outcome, error) {
	codec, declared := cl.rcodec, cl.declared
	cl.rcodec = nil
	if err := budget.acquire(ctx, int64(declared)); err != nil {
		return ctxOutcome(ctx.Err()), err
	}
	out, err := codecs.Decompress(ctx, codec, cl.body[:0], cl.raw, declared)
	budget.release(int64(declared))
	switch {
	case err == nil && len(out) == declared:
		cl.body = out
		return outcomeSuccess, nil
	case err == nil:
		cl.body = out[:0]
		return outcomeRemoteError, &bodyError{
			st:    status.Errorf(protocol.CodeDataLoss, "the server's %s response decodes to %d bytes, not the %d it declared", codec.Name(), len(out), declared),
			cause: spi.ErrCorrupt,
		}
	case ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)):
		err := ctx.Err()
		return ctxOutcome(err), err
	case errors.Is(err, spi.ErrDecodedTooLarge):
		return outcomeRemoteError, &bodyError{
			st:    status.Errorf(protocol.CodeDataLoss, "the server's %s response decodes to more than the %d bytes it declared: refused", codec.Name(), declared),
			cause: err,
		}
	case errors.Is(err, spi.ErrCorrupt):
		return outcomeRemoteError, &bodyError{
			st:    status.Errorf(protocol.CodeDataLoss, "the server's %s response does not decode: %v", codec.Name(), err),
			cause: err,
		}
	default:
		return outcomeRemoteError, &bodyError{
			st:    status.Errorf(protocol.CodeInternal, "decoding the server's %s response failed: %v", codec.Name(), err),
			cause: err,
		}
	}
}

// bodyError is the error of a call whose compressed response was refused:
// its status (status.Code and status.FromError find it) and the cause
// (spi.ErrDecodedTooLarge or spi.ErrCorrupt, for errors.Is).
type bodyError struct {
	st    *status.Error
	cause error
}

func (e *bodyError) Error() string   { return e.st.Error() }
func (e *bodyError) Unwrap() []error { return []error{e.st, e.cause} }
