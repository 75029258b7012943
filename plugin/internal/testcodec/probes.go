package testcodec

import (
	"context"
	"errors"
	"math"
	"strconv"

	"github.com/sluicerpc/sluice/spi"
)

// BlockingName is the wire profile name of Blocking.
const BlockingName = "testcodec.blocking"

// Requests understood by Blocking's Decompress (its src).
const (
	// Wait blocks until the call's context ends, then records its error
	// and returns it.
	Wait = "wait"
	// Entered blocks until a Wait call has started, and returns nothing.
	Entered = "entered"
	// Stopped blocks until a Wait call has returned, and returns the text
	// of the context error it saw.
	Stopped = "stopped"
	// Deadline returns the call's context deadline as decimal Unix
	// nanoseconds, or "none".
	Deadline = "deadline"
)

// Blocking is a probe of context propagation: its Decompress obeys the
// requests Wait, Entered, Stopped and Deadline, so that a host can tell, through
// the bridge itself, that a decode started in the plugin and that its
// context ended there. Compress copies src when it fits. One Blocking
// serves every host of a plugin process.
type Blocking struct {
	entered chan struct{}
	stopped chan error
}

// NewBlocking returns a Blocking that remembers up to 64 unclaimed
// events of each sort.
func NewBlocking() *Blocking {
	return &Blocking{entered: make(chan struct{}, 64), stopped: make(chan error, 64)}
}

func (*Blocking) Name() string { return BlockingName }

func (*Blocking) Compress(dst, src []byte) ([]byte, bool, error) {
	if len(src) > cap(dst)-len(dst) {
		return dst, false, nil
	}
	return append(dst, src...), true, nil
}

func (b *Blocking) Decompress(ctx context.Context, dst, src []byte, _ int) ([]byte, error) {
	switch string(src) {
	case Wait:
		b.entered <- struct{}{}
		<-ctx.Done()
		b.stopped <- ctx.Err()
		return dst, ctx.Err()
	case Entered:
		select {
		case <-b.entered:
			return dst, nil
		case <-ctx.Done():
			return dst, ctx.Err()
		}
	case Deadline:
		d, ok := ctx.Deadline()
		if !ok {
			return append(dst, "none"...), nil
		}
		return strconv.AppendInt(dst, d.UnixNano(), 10), nil
	case Stopped:
		select {
		case err := <-b.stopped:
			return append(dst, err.Error()...), nil
		case <-ctx.Done():
			return dst, ctx.Err()
		}
	}
	return dst, spi.CorruptError(BlockingName, "unknown request "+string(src), nil)
}

// UnboundedName is the wire profile name of Unbounded.
const UnboundedName = "testcodec.unbounded"

// Unbounded is Deflate with a broken Decompress: it ignores its limit and
// answers with the whole body, however large. It tests that the host
// refuses what the plugin answers beyond the limit.
func Unbounded() spi.Codec { return unbounded{} }

type unbounded struct{ deflateCodec }

func (unbounded) Name() string { return UnboundedName }

func (u unbounded) Decompress(ctx context.Context, dst, src []byte, _ int) ([]byte, error) {
	return u.deflateCodec.Decompress(ctx, dst, src, math.MaxInt32)
}

// GrowingName is the wire profile name of Growing.
const GrowingName = "testcodec.growing"

// Growing is Deflate with a broken Compress: it grows dst whenever the
// compressed form does not fit. It tests that the host never returns more
// than the room it had.
func Growing() spi.Codec { return growing{} }

type growing struct{ deflateCodec }

func (growing) Name() string { return GrowingName }

func (g growing) Compress(dst, src []byte) ([]byte, bool, error) {
	big := make([]byte, len(dst), len(dst)+len(src)+1024)
	copy(big, dst)
	return g.deflateCodec.Compress(big, src)
}

// PanickingName is the wire profile name of Panicking.
const PanickingName = "testcodec.panicking"

// PanicMessage is what Panicking panics with.
const PanicMessage = "testcodec: Decompress panicked"

// Panicking is Deflate whose Decompress panics, and whose Bomb builder
// fails (with ErrNoBombHere).
func Panicking() spi.Codec { return panicking{} }

type panicking struct{ deflateCodec }

func (panicking) Name() string { return PanickingName }

func (panicking) Decompress(context.Context, []byte, []byte, int) ([]byte, error) {
	panic(PanicMessage)
}

// ErrNoBombHere is the error of FailingBomb.
var ErrNoBombHere = errors.New("testcodec: this bomb builder always fails")

// FailingBomb is a bomb builder that always fails.
func FailingBomb(int64) ([]byte, error) { return nil, ErrNoBombHere }

// TrailingName is the wire profile name of Trailing.
const TrailingName = "testcodec.trailing"

// Trailing is Deflate with a broken Decompress: it accepts bytes after the
// stream. Only the codec suite's CorruptInput check can tell it from
// Deflate, and the bridge cannot hide it (unlike a codec that ignores its
// limit or its context, which the host bounds itself).
func Trailing() spi.Codec { return trailing{} }

type trailing struct{ deflateCodec }

func (trailing) Name() string { return TrailingName }

func (trailing) Decompress(ctx context.Context, dst, src []byte, limit int) ([]byte, error) {
	return inflate(ctx, dst, src, limit, true)
}
