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

// maxCharge bounds a single message's charge: protocol.MaxMessageCharge
// (MaxWindow), the most one WindowUpdate can return. Every charge is made
// while outstanding is below the window (at most MaxWindow), so
// outstanding stays below 2·MaxWindow and no sum overflows. A sender
// refuses a larger message ([ErrTooLarge]); a receiver calls one a
// violation (a declared length no window could give back).
const maxCharge = protocol.MaxMessageCharge

// violation returns a *protocol.ProtocolError. It allocates; it is only
// used on error paths.
func violation(format string, args ...any) error {
	return &protocol.ProtocolError{Reason: fmt.Sprintf(format, args...)}
}

// ErrTooLarge is returned for a message charged more than
// protocol.MaxMessageCharge (2³¹−1 bytes), which no WindowUpdate could
// give back, and by [RecvWindow.Grow] for a window that would exceed its
// max.
var ErrTooLarge = errors.New("sluice/flow: message too large")
