package plugin

import (
	"context"
	"errors"
	"strings"

	"github.com/sluicerpc/sluice/plugin/internal/pb"
	"github.com/sluicerpc/sluice/spi"
)

// MaxCodecBody is the largest body, compressed or decoded, that crosses
// the codec bridge in one call (a gRPC message carries less than 2 GiB).
// A plugin codec's Decompress with a larger limit decodes at most this
// much and refuses more with ErrDecodedTooLarge; its Compress of a larger
// source reports "would not fit", and its Decompress of a larger source
// fails (wrapping ErrCodecBodyTooLarge).
const MaxCodecBody = 1 << 30

// ErrCodecBodyTooLarge is wrapped by a plugin codec's Decompress whose
// compressed input is larger than MaxCodecBody.
var ErrCodecBodyTooLarge = errors.New("sluice/plugin: body larger than the codec bridge carries")

// codecErrorText is the most of a codec error's text that crosses; the
// rest is cut.
const codecErrorText = 1024

// codecReplyFraming is more than a reply holds besides its bytes: field
// tags, lengths, and an error of at most codecErrorText bytes of text. The
// host reads at most the bound of a call plus this.
const codecReplyFraming = codecErrorText + 64

// codecServerMaxMessage is what a plugin's gRPC server accepts in one
// message: a body of MaxCodecBody and its request's framing.
const codecServerMaxMessage = MaxCodecBody + 1<<16

// toCodecError carries a codec's error, its text made valid UTF-8 (a
// protobuf string must be) and cut to codecErrorText bytes, with the kind
// of contract error it wraps.
func toCodecError(err error) *pb.CodecError {
	if err == nil {
		return nil
	}
	msg := strings.ToValidUTF8(err.Error(), "\uFFFD")
	if len(msg) > codecErrorText {
		msg = strings.ToValidUTF8(msg[:codecErrorText-len(cutMark)], "") + cutMark
	}
	e := &pb.CodecError{Message: msg}
	switch {
	case errors.Is(err, spi.ErrDecodedTooLarge):
		e.Kind = pb.CodecErrorKind_CODEC_ERROR_TOO_LARGE
	case errors.Is(err, spi.ErrCorrupt):
		e.Kind = pb.CodecErrorKind_CODEC_ERROR_CORRUPT
	case errors.Is(err, context.Canceled):
		e.Kind = pb.CodecErrorKind_CODEC_ERROR_CANCELED
	case errors.Is(err, context.DeadlineExceeded):
		e.Kind = pb.CodecErrorKind_CODEC_ERROR_DEADLINE_EXCEEDED
	case errors.Is(err, errors.ErrUnsupported):
		e.Kind = pb.CodecErrorKind_CODEC_ERROR_UNSUPPORTED
	}
	return e
}

// cutMark ends the text of a codec error that was cut.
const cutMark = " [cut]"

// fromCodecError rebuilds a codec's error as a *RemoteError whose Cause is
// the contract error it wrapped in the plugin (nil for any other error).
func fromCodecError(e *pb.CodecError) error {
	if e == nil {
		return nil
	}
	re := &RemoteError{Message: e.GetMessage()}
	switch e.GetKind() {
	case pb.CodecErrorKind_CODEC_ERROR_TOO_LARGE:
		re.Cause = spi.ErrDecodedTooLarge
	case pb.CodecErrorKind_CODEC_ERROR_CORRUPT:
		re.Cause = spi.ErrCorrupt
	case pb.CodecErrorKind_CODEC_ERROR_CANCELED:
		re.Cause = context.Canceled
	case pb.CodecErrorKind_CODEC_ERROR_DEADLINE_EXCEEDED:
		re.Cause = context.DeadlineExceeded
	case pb.CodecErrorKind_CODEC_ERROR_UNSUPPORTED:
		re.Cause = errors.ErrUnsupported
	}
	return re
}
