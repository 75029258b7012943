package protocol

import (
	"encoding/binary"
	"math/bits"
	"unicode/utf8"
)

// uvarintLen returns the number of bytes binary.AppendUvarint writes for v.
func uvarintLen(v uint64) int {
	return (bits.Len64(v|1) + 6) / 7
}

// bytesLen returns the encoded size of a length-prefixed byte field.
func bytesLen(n int) int { return uvarintLen(uint64(n)) + n }

// appendBytes appends a uvarint length followed by b.
func appendBytes(dst, b []byte) []byte {
	return append(binary.AppendUvarint(dst, uint64(len(b))), b...)
}

// appendString appends a uvarint length followed by s.
func appendString(dst []byte, s string) []byte {
	return append(binary.AppendUvarint(dst, uint64(len(s))), s...)
}

// cursor reads fields from the front of a payload. Its methods never
// allocate on success; what names the frame and field for error reasons.
type cursor struct {
	b    []byte
	what string // frame name, for error reasons
}

func (c *cursor) truncated(field string) error {
	return violation("%s: truncated %s", c.what, field)
}

func (c *cursor) u8(field string) (uint8, error) {
	if len(c.b) < 1 {
		return 0, c.truncated(field)
	}
	v := c.b[0]
	c.b = c.b[1:]
	return v, nil
}

func (c *cursor) u16(field string) (uint16, error) {
	if len(c.b) < 2 {
		return 0, c.truncated(field)
	}
	v := binary.LittleEndian.Uint16(c.b)
	c.b = c.b[2:]
	return v, nil
}

func (c *cursor) u32(field string) (uint32, error) {
	if len(c.b) < 4 {
		return 0, c.truncated(field)
	}
	v := binary.LittleEndian.Uint32(c.b)
	c.b = c.b[4:]
	return v, nil
}

func (c *cursor) u64(field string) (uint64, error) {
	if len(c.b) < 8 {
		return 0, c.truncated(field)
	}
	v := binary.LittleEndian.Uint64(c.b)
	c.b = c.b[8:]
	return v, nil
}

// uvarint reads an encoding/binary uvarint, rejecting truncated, overlong
// (more than 10 bytes) and overflowing encodings.
func (c *cursor) uvarint(field string) (uint64, error) {
	v, n := binary.Uvarint(c.b)
	if n <= 0 {
		if n == 0 {
			return 0, c.truncated(field)
		}
		return 0, violation("%s: malformed uvarint %s", c.what, field)
	}
	c.b = c.b[n:]
	return v, nil
}

// bytes reads a uvarint length and that many bytes, which must not exceed
// max. The result aliases the cursor's buffer.
func (c *cursor) bytes(field string, max uint64) ([]byte, error) {
	n, k := binary.Uvarint(c.b)
	if k <= 0 {
		if k == 0 {
			return nil, violation("%s: truncated %s length", c.what, field)
		}
		return nil, violation("%s: malformed uvarint %s length", c.what, field)
	}
	c.b = c.b[k:]
	if n > max {
		return nil, violation("%s: %s is %d bytes, limit %d", c.what, field, n, max)
	}
	if n > uint64(len(c.b)) {
		return nil, c.truncated(field)
	}
	v := c.b[:n:n]
	c.b = c.b[n:]
	return v, nil
}

// end reports trailing bytes as a violation.
func (c *cursor) end() error {
	if len(c.b) != 0 {
		return violation("%s: %d trailing bytes", c.what, len(c.b))
	}
	return nil
}

// maxMicros is the largest microsecond count representable as a
// time.Duration.
const maxMicros = (1<<63 - 1) / 1000

// Message validation shared by Error and GoAway.

func validMessage(b []byte) bool { return len(b) <= MaxMessageLen && utf8.Valid(b) }

func validMessageString(s string) bool {
	return len(s) <= MaxMessageLen && utf8.ValidString(s)
}
