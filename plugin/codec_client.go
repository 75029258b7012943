package plugin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sluicerpc/sluice/plugin/internal/pb"
	"github.com/sluicerpc/sluice/spi"
)

// ErrNoBomb is wrapped by CodecClient.Bomb for a codec the plugin builds
// no bombs for (its CodecEntry.Bomb is nil).
var ErrNoBomb = errors.New("sluice/plugin: the plugin builds no bombs for this codec")

// Codecs returns the codecs the plugin serves, in the order it serves
// them.
func (p *Plugin) Codecs() []*CodecClient { return slices.Clone(p.codecs) }

// Codec returns the served codec named name.
func (p *Plugin) Codec(name string) (*CodecClient, error) {
	for _, c := range p.codecs {
		if c.name == name {
			return c, nil
		}
	}
	return nil, fmt.Errorf("sluice/plugin: the plugin serves no codec %q (it serves %q)", name, p.codecNames())
}

func (p *Plugin) codecNames() []string {
	names := make([]string, len(p.codecs))
	for i, c := range p.codecs {
		names[i] = c.name
	}
	return names
}

// WithCodec makes OpenCodec return the codec named name, for a plugin that
// serves several. Open ignores it.
func WithCodec(name string) Option { return func(o *options) { o.codec = name } }

// OpenCodec opens the plugin binary at path and returns the codec it
// serves: the one named by WithCodec, or the only one. Closing the
// returned codec closes the plugin.
func OpenCodec(path string, opts ...Option) (*CodecClient, error) {
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	p, err := Open(path, opts...)
	if err != nil {
		return nil, err
	}
	if o.codec != "" {
		c, err := p.Codec(o.codec)
		if err != nil {
			_ = p.Close()
			return nil, err
		}
		return c, nil
	}
	if len(p.codecs) != 1 {
		names := p.codecNames()
		_ = p.Close()
		return nil, fmt.Errorf("sluice/plugin: %s serves %d codecs %q; choose one with WithCodec", path, len(names), names)
	}
	return p.codecs[0], nil
}

// CodecClient is a codec served by a plugin, seen from the host. It
// implements spi.Codec; every call crosses the process boundary with its
// whole body (at most MaxCodecBody; decoded bodies in pieces of at most
// spi.DecodeQuantum), so a plug-in codec costs a copy of each body on each
// side on top of the codec's own work. It is safe for concurrent use.
//
// The contract holds across the boundary. Compress never grows dst: the
// plugin is given the room left in dst as its bound, and an answer longer
// than that is refused (the host reads no more than the bound). Decompress
// decodes in the plugin under limit; the host reads no more than limit
// bytes of answer, a quantum at a time, and refuses a longer one with an
// error wrapping spi.ErrDecodedTooLarge. The codec's errors cross as *RemoteError, whose
// Cause keeps spi.ErrDecodedTooLarge, spi.ErrCorrupt, context.Canceled and
// context.DeadlineExceeded recognizable by errors.Is. The context crosses:
// its deadline and its cancellation end the context of the codec in the
// plugin, and Decompress checks it between the pieces of decoded bytes
// too, so the contract's bound (within one spi.DecodeQuantum of output)
// holds on the host whatever the plugin does.
//
// Failures: when the plugin cannot be reached (crashed, closed, or it left
// the call unanswered for the call timeout) Compress reports "would not
// fit" with an error wrapping ErrPluginUnavailable, and Decompress and
// Bomb return such an error; each is counted and remembered by the plugin
// (Plugin.Failures, Plugin.Err) and logged. A panic of the codec in the
// plugin is re-raised in the host's caller, as for every implementation
// the bridge serves. A decode longer than the call timeout is taken as a
// hung plugin: choose the timeout (WithCallTimeout) above the slowest
// legitimate decode.
type CodecClient struct {
	p    *Plugin
	name string
	bomb bool
}

var _ spi.Codec = (*CodecClient)(nil)

// Name returns the wire profile name the plugin's codec reported at load.
func (c *CodecClient) Name() string { return c.name }

// Plugin returns the plugin that serves c.
func (c *CodecClient) Plugin() *Plugin { return c.p }

// Close closes the plugin that serves c, and with it everything it
// serves. Close is idempotent.
func (c *CodecClient) Close() error { return c.p.Close() }

// HasBomb reports whether the plugin builds bombs for c (Bomb).
func (c *CodecClient) HasBomb() bool { return c.bomb }

func (c *CodecClient) fail(call call, op string, err error) error {
	return c.p.failure(call, fmt.Sprintf("codec %q", c.name), op, err, true)
}

// Compress compresses src in the plugin into at most the room left in dst,
// and copies the result into that room. See the type's documentation for
// failures.
func (c *CodecClient) Compress(dst, src []byte) ([]byte, bool, error) {
	if len(src) > MaxCodecBody {
		return dst, false, nil // it could not cross; the caller sends it as it is
	}
	bound := min(cap(dst)-len(dst), MaxCodecBody)
	call := c.p.watch.begin()
	defer call.end()
	r, err := c.p.codecRPC.Compress(call.ctx, &pb.CompressRequest{Name: c.name, Src: src, Bound: int64(bound)},
		grpc.MaxCallRecvMsgSize(bound+codecReplyFraming))
	switch {
	case status.Code(err) == codes.ResourceExhausted:
		return dst, false, fmt.Errorf("sluice/plugin: codec %q: compress answered more than the %d bytes of room it was given", c.name, bound)
	case err != nil:
		return dst, false, c.fail(call, "compress", err)
	case r.GetError() != nil:
		return dst, false, fromCodecError(r.GetError())
	case !r.GetFits():
		return dst, false, nil
	case len(r.GetOut()) > bound:
		return dst, false, fmt.Errorf("sluice/plugin: codec %q: compress answered %d bytes, more than the %d bytes of room it was given", c.name, len(r.GetOut()), bound)
	}
	return append(dst, r.GetOut()...), true, nil
}

// Decompress decodes src in the plugin under limit and ctx, and appends
// the result to dst. The decoded bytes cross in pieces of at most
// spi.DecodeQuantum; Decompress appends each to dst and checks ctx after
// it, so it returns within one quantum of output after ctx ends, whether
// or not the plugin's codec has noticed (its context ends with the
// stream). See the type's documentation for the errors.
func (c *CodecClient) Decompress(ctx context.Context, dst, src []byte, limit int) ([]byte, error) {
	base := len(dst)
	cancelled := func(err error) ([]byte, error) {
		return dst[:base], fmt.Errorf("sluice/plugin: codec %q: decompress: %w", c.name, err)
	}
	if err := ctx.Err(); err != nil {
		return cancelled(err)
	}
	if len(src) > MaxCodecBody {
		return dst[:base], fmt.Errorf("sluice/plugin: codec %q: %d compressed bytes: %w (%d)", c.name, len(src), ErrCodecBodyTooLarge, MaxCodecBody)
	}
	wireLimit := min(max(limit, 0), MaxCodecBody)
	call := c.p.watch.begin()
	defer call.end()
	// The stream ends when the host's ctx does (its deadline crosses as
	// the call's), when the call watch gives up on the plugin, or when
	// this call returns early. The request goes out before ctx is
	// watched: a watcher calls ctx.Done, and the request's marshalling
	// (a copy of src) is work done before, not after, a cancellation
	// that watching would deliver.
	callCtx := context.WithoutCancel(ctx)
	deadline, hasDeadline := ctx.Deadline()
	if hasDeadline {
		var cancelDeadline context.CancelFunc
		callCtx, cancelDeadline = context.WithDeadline(callCtx, deadline)
		defer cancelDeadline()
	}
	callCtx, cancel := context.WithCancelCause(callCtx)
	defer cancel(nil)
	stop := context.AfterFunc(call.ctx, func() { cancel(context.Cause(call.ctx)) })
	defer stop()
	stream, err := c.p.codecRPC.DecompressChunks(callCtx,
		&pb.DecompressRequest{Name: c.name, Src: src, Limit: int64(wireLimit), Hint: int64(cap(dst) - base)},
		grpc.MaxCallRecvMsgSize(spi.DecodeQuantum+codecReplyFraming))
	stopCaller := context.AfterFunc(ctx, func() { cancel(context.Cause(ctx)) })
	defer stopCaller()
	out := dst
	for err == nil {
		var r *pb.DecompressReply
		if r, err = stream.Recv(); err != nil {
			break
		}
		piece := r.GetOut()
		switch {
		case r.GetError() != nil && len(piece) > 0:
			return dst[:base], fmt.Errorf("sluice/plugin: codec %q: the plugin answered both %d decoded bytes and an error (%s)", c.name, len(piece), r.GetError().GetMessage())
		case r.GetError() != nil:
			rerr := fromCodecError(r.GetError())
			if wireLimit < limit && errors.Is(rerr, spi.ErrDecodedTooLarge) {
				return dst[:base], fmt.Errorf("sluice/plugin: codec %q: more than the %d decoded bytes the codec bridge carries: %w", c.name, MaxCodecBody, rerr)
			}
			return dst[:base], rerr
		case len(piece) > wireLimit-(len(out)-base):
			return dst[:base], fmt.Errorf("sluice/plugin: codec %q: the plugin answered at least %d decoded bytes, more than the limit %d: %w", c.name, len(out)-base+len(piece), wireLimit, spi.ErrDecodedTooLarge)
		case len(out) == 0 && cap(out) < len(piece):
			out = piece // the reply's buffer is the host's own: no copy
		default:
			out = append(out, piece...)
		}
		if err := ctx.Err(); err != nil {
			return cancelled(err)
		}
	}
	switch {
	case err == io.EOF:
		return out, nil
	case ctx.Err() != nil:
		return cancelled(ctx.Err())
	case hasDeadline && status.Code(err) == codes.DeadlineExceeded && !time.Now().Before(deadline):
		return cancelled(context.DeadlineExceeded) // ours fired a moment before ctx's
	case status.Code(err) == codes.ResourceExhausted:
		return dst[:base], fmt.Errorf("sluice/plugin: codec %q: the plugin answered a piece of more than %d decoded bytes, the bridge's most: %w", c.name, spi.DecodeQuantum, err)
	}
	return dst[:base], c.fail(call, "decompress", err)
}

// Bomb asks the plugin for one complete compressed body in c's format that
// decodes to exactly decoded zero bytes (see CodecEntry.Bomb). It fails
// with an error wrapping ErrNoBomb when the plugin builds no bombs for c.
func (c *CodecClient) Bomb(decoded int64) ([]byte, error) {
	if !c.bomb {
		return nil, fmt.Errorf("%w: codec %q", ErrNoBomb, c.name)
	}
	call := c.p.watch.begin()
	defer call.end()
	r, err := c.p.codecRPC.Bomb(call.ctx, &pb.BombRequest{Name: c.name, Decoded: decoded})
	switch {
	case err != nil:
		return nil, c.fail(call, "bomb", err)
	case r.GetError() != nil:
		return nil, fromCodecError(r.GetError())
	}
	return r.GetBody(), nil
}
