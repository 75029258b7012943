package protocol

import "encoding/binary"

// GoAway is the decoded payload of a GoAway frame (id 0, either
// direction): the sender accepts no new requests on the connection.
//
// Payload layout: uint64 last accepted request id (little-endian), uint8
// code (0..16, 0 = graceful shutdown), message (uvarint length + UTF-8,
// <= 4096 bytes). No trailing bytes.
type GoAway struct {
	// LastID is the highest request id the sender accepted. Requests with a
	// larger id were not processed and may be retried on another connection.
	LastID  uint64
	Code    Code
	Message string
}

// ParseGoAway decodes a GoAway frame payload into g. Message is copied
// (this allocates).
func ParseGoAway(h Header, payload []byte, g *GoAway) error {
	if err := checkFrame(h, FrameGoAway, payload); err != nil {
		return err
	}
	c := cursor{b: payload, what: "goaway"}
	last, err := c.u64("last id")
	if err != nil {
		return err
	}
	code, err := c.u8("code")
	if err != nil {
		return err
	}
	if Code(code) > maxCode {
		return violation("goaway: code %d out of range 0..16", code)
	}
	msg, err := c.bytes("message", MaxMessageLen)
	if err != nil {
		return err
	}
	if !validMessage(msg) {
		return violation("goaway: message is not valid UTF-8")
	}
	if err := c.end(); err != nil {
		return err
	}
	g.LastID, g.Code, g.Message = last, Code(code), string(msg)
	return nil
}

// AppendGoAway appends a complete GoAway frame to dst. It returns an error
// wrapping [ErrInvalidValue], and dst unchanged, for an unknown code or a
// message longer than 4096 bytes or not valid UTF-8.
func AppendGoAway(dst []byte, g *GoAway) ([]byte, error) {
	if !g.Code.Valid() {
		return dst, invalid("goaway: code %v", g.Code)
	}
	if !validMessageString(g.Message) {
		return dst, invalid("goaway: message longer than 4096 bytes or not UTF-8")
	}
	size := 8 + 1 + bytesLen(len(g.Message))
	dst, err := appendFrameHeader(dst, FrameGoAway, 0, 0, size)
	if err != nil {
		return dst, err
	}
	dst = binary.LittleEndian.AppendUint64(dst, g.LastID)
	dst = append(dst, byte(g.Code))
	return appendString(dst, g.Message), nil
}
