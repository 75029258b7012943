package protocol

import "encoding/binary"

// Flow-control windows (docs/streaming.md). The unit is a message's
// charge (MessageCost). The accounting itself is in package
// protocol/flow; this package only carries the frame.
const (
	// InitialStreamWindow is every stream's window in each direction when
	// it opens: 64 KiB.
	InitialStreamWindow = 64 << 10
	// InitialConnWindow is the connection's window in each direction when
	// the handshake completes: 1 MiB.
	InitialConnWindow = 1 << 20
	// MaxWindow is the largest a window may grow to, and the largest
	// value either field of a WindowUpdate may carry: 2³¹−1.
	MaxWindow = 1<<31 - 1
	// DefaultStreamWindow is the receive window sluice's server and
	// client grow each stream to once it runs (their Options.StreamWindow
	// by default): 256 KiB, so that a stream of large messages is not
	// held to one round trip per 64 KiB. The connection's window still
	// bounds every stream of a connection together.
	DefaultStreamWindow = 256 << 10
)

// WindowUpdate is the decoded payload of a WindowUpdate frame (no flags),
// sent by a receiver to its peer, the sender of messages. With id 0 it
// concerns the connection's window, otherwise that stream's.
//
// Payload layout: uvarint returned bytes (the receiver's consumer took
// them), uvarint window growth; not both 0, each at most [MaxWindow]. No
// trailing bytes. Whether the returned bytes exceed what is outstanding
// (a double return) and whether the grown window exceeds MaxWindow are
// the flow-control accounting's to check; both are violations too.
type WindowUpdate struct {
	// Returned is the number of bytes given back to the sender's credit.
	Returned uint32
	// Growth enlarges the window by that many bytes.
	Growth uint32
}

// ParseWindowUpdate decodes a WindowUpdate frame payload into w. It does
// not allocate on success.
func ParseWindowUpdate(h Header, payload []byte, w *WindowUpdate) error {
	if err := checkFrame(h, FrameWindowUpdate, payload); err != nil {
		return err
	}
	c := cursor{b: payload, what: "window update"}
	ret, err := c.uvarint("returned bytes")
	if err != nil {
		return err
	}
	grow, err := c.uvarint("window growth")
	if err != nil {
		return err
	}
	if err := c.end(); err != nil {
		return err
	}
	if ret > MaxWindow || grow > MaxWindow {
		return violation("window update: returned %d / growth %d exceeds MaxWindow %d", ret, grow, uint64(MaxWindow))
	}
	if ret == 0 && grow == 0 {
		return violation("window update: returned and growth both 0")
	}
	w.Returned, w.Growth = uint32(ret), uint32(grow)
	return nil
}

// AppendWindowUpdate appends a complete WindowUpdate frame to dst, for the
// connection (id 0) or a stream. It does not allocate when dst has enough
// capacity. It returns an error wrapping [ErrInvalidValue], and dst
// unchanged, when both fields are 0 or either exceeds [MaxWindow].
func AppendWindowUpdate(dst []byte, id uint64, w *WindowUpdate) ([]byte, error) {
	if w.Returned == 0 && w.Growth == 0 {
		return dst, invalid("window update: returned and growth both 0")
	}
	if w.Returned > MaxWindow || w.Growth > MaxWindow {
		return dst, invalid("window update: returned %d / growth %d exceeds MaxWindow", w.Returned, w.Growth)
	}
	size := uvarintLen(uint64(w.Returned)) + uvarintLen(uint64(w.Growth))
	dst = AppendHeader(dst, Header{Type: FrameWindowUpdate, Length: uint32(size), ID: id})
	dst = binary.AppendUvarint(dst, uint64(w.Returned))
	return binary.AppendUvarint(dst, uint64(w.Growth)), nil
}

// AppendWindowReturn appends the WindowUpdate frames that return returned
// bytes and grow the window by growth on id (0: the connection): one frame
// when both fit in [MaxWindow], one more for each further MaxWindow of
// either. A receive window may owe more than one frame can carry: its
// outstanding bytes reach 2·MaxWindow−1 when a window of MaxWindow, one
// byte short of full, receives a message charged MaxWindow
// ([MaxMessageCharge]). Both zero appends nothing. It does not allocate
// when dst has room for the frames (HeaderSize+10 bytes each).
func AppendWindowReturn(dst []byte, id, returned, growth uint64) []byte {
	for returned > 0 || growth > 0 {
		r, g := min(returned, MaxWindow), min(growth, MaxWindow)
		dst, _ = AppendWindowUpdate(dst, id, &WindowUpdate{Returned: uint32(r), Growth: uint32(g)}) // in range, not both 0
		returned, growth = returned-r, growth-g
	}
	return dst
}
