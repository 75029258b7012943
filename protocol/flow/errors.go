package flow

import (
	"errors"
	"fmt"

	"github.com/sluicerpc/sluice/protocol"
)

// ErrClosed is returned by [SendWindow.Reserve] and [ReservePair] once a
// window the call needs was closed by [SendWindow.Close] (the stream ended
// or the connection closed).
var ErrClosed = errors.New("sluice/flow: window closed")

// maxCharge bounds a single message's length. Every charge is made while
// outstanding is below the window (at most 2^32-1), so outstanding stays
// below 2^63 and no sum overflows. No frame can carry a message this large;
// a declared length above it is refused rather than wrapped.
const maxCharge = 1 << 62

// violation returns a *protocol.ProtocolError. It allocates; it is only
// used on error paths.
func violation(format string, args ...any) error {
	return &protocol.ProtocolError{Reason: fmt.Sprintf(format, args...)}
}

// ErrTooLarge is returned for a message longer than 2^62 bytes, which no
// window can account.
var ErrTooLarge = errors.New("sluice/flow: message too large")
