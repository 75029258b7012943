package protocol

import "strconv"

// CancelReason is the payload of a Cancel frame: a single byte.
type CancelReason uint8

const (
	// CancelCaller: the caller cancelled the call.
	CancelCaller CancelReason = 1
	// CancelDeadline: the caller's deadline expired.
	CancelDeadline CancelReason = 2
)

// Valid reports whether r is a defined cancel reason.
func (r CancelReason) Valid() bool { return r == CancelCaller || r == CancelDeadline }

// String returns "caller", "deadline", or "CancelReason(N)".
func (r CancelReason) String() string {
	switch r {
	case CancelCaller:
		return "caller"
	case CancelDeadline:
		return "deadline"
	}
	return "CancelReason(" + strconv.Itoa(int(r)) + ")"
}

// ParseCancel decodes a Cancel frame payload (exactly one byte: 1 or 2).
// It does not allocate on success.
func ParseCancel(h Header, payload []byte) (CancelReason, error) {
	if err := checkFrame(h, FrameCancel, payload); err != nil {
		return 0, err
	}
	c := cursor{b: payload, what: "cancel"}
	v, err := c.u8("reason")
	if err != nil {
		return 0, err
	}
	if err := c.end(); err != nil {
		return 0, err
	}
	if r := CancelReason(v); r.Valid() {
		return r, nil
	}
	return 0, violation("cancel: unknown reason %d", v)
}

// AppendCancel appends a complete Cancel frame for request id to dst. It
// returns an error wrapping [ErrInvalidValue], and dst unchanged, for id 0
// or an undefined reason.
func AppendCancel(dst []byte, id uint64, reason CancelReason) ([]byte, error) {
	if id == 0 {
		return dst, invalid("cancel: id 0")
	}
	if !reason.Valid() {
		return dst, invalid("cancel: reason %v", reason)
	}
	dst = AppendHeader(dst, Header{Type: FrameCancel, Length: 1, ID: id})
	return append(dst, byte(reason)), nil
}
