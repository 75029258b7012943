package server

import (
	"errors"
	"fmt"
	"strings"

	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/protocol/status"
)

// ErrServerClosed is returned by Serve after Stop or Close.
var ErrServerClosed = errors.New("server: closed")

func invalidArgument(err error) error {
	return &status.Error{Code: protocol.CodeInvalidArgument, Message: err.Error()}
}

// errorFrameOf turns a handler's error into the Error frame the caller gets.
// A reason on the wire means the server refused the call without running
// it (docs/protocol.md), so a client may send it again elsewhere: the
// handler ran, so its error is sent without the reason it may carry (its
// code, message and retry hint go through).
func errorFrameOf(err error) protocol.ErrorFrame {
	if e, ok := status.FromError(err); ok && e.Code != protocol.CodeOK {
		return protocol.ErrorFrame{Code: e.Code, Message: clip(e.Message), RetryAfter: e.RetryAfter}
	}
	return protocol.ErrorFrame{Code: status.Code(err), Message: clip(err.Error())}
}

// clip makes s a valid Error message: valid UTF-8 within the protocol's
// bound, cut on a rune boundary.
func clip(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= protocol.MaxMessageLen {
		return s
	}
	i := protocol.MaxMessageLen
	for i > 0 && s[i]&0xC0 == 0x80 {
		i--
	}
	return s[:i]
}

func panicFrame(r any) protocol.ErrorFrame {
	return protocol.ErrorFrame{Code: protocol.CodeInternal, Message: clip(fmt.Sprintf("handler panic: %v", r))}
}
