package protocol

import "encoding/binary"

// Header is the fixed 16-byte frame header:
//
//	offset 0  uint8   magic (0xA7)
//	offset 1  uint8   frame type
//	offset 2  uint16  flags          (little-endian)
//	offset 4  uint32  payload length (little-endian, bytes after the header)
//	offset 8  uint64  id             (little-endian; 0 for connection-level frames)
type Header struct {
	Type   FrameType
	Flags  Flags
	Length uint32
	ID     uint64
}

// AppendHeader appends the 16-byte encoding of h to dst and returns the
// extended slice. It does not validate h; it allocates only when dst lacks
// capacity.
func AppendHeader(dst []byte, h Header) []byte {
	dst = append(dst, Magic, byte(h.Type))
	dst = binary.LittleEndian.AppendUint16(dst, uint16(h.Flags))
	dst = binary.LittleEndian.AppendUint32(dst, h.Length)
	return binary.LittleEndian.AppendUint64(dst, h.ID)
}

// ParseHeader decodes the header in the first HeaderSize bytes of b and
// validates it: magic, known frame type, flags allowed for the type,
// OneWay together with Cancellable, the stream flags of a Request (Stream
// not with OneWay; HasMessage and EndStream only with Stream; Compressed
// on a stream only with HasMessage), the id class of the type (0 or
// non-zero), Length <= maxFrameSize, and Length == 8 for Ping and Pong.
// The direction rules of Message and End flags are the endpoint's (see
// [MessageFlagsFromClient]).
// Bytes after the header are ignored. It does not allocate on success.
func ParseHeader(b []byte, maxFrameSize uint32) (Header, error) {
	if len(b) < HeaderSize {
		return Header{}, violation("header: short header (%d bytes)", len(b))
	}
	if b[0] != Magic {
		return Header{}, violation(badMagic+" 0x%02x", b[0])
	}
	h := Header{
		Type:   FrameType(b[1]),
		Flags:  Flags(binary.LittleEndian.Uint16(b[2:])),
		Length: binary.LittleEndian.Uint32(b[4:]),
		ID:     binary.LittleEndian.Uint64(b[8:]),
	}
	if !h.Type.Valid() {
		return Header{}, violation("header: unknown frame type %d", b[1])
	}
	rule := frameRules[h.Type]
	if bad := h.Flags &^ rule.flags; bad != 0 {
		return Header{}, violation("header: flags %v not allowed on %v", bad, h.Type)
	}
	if h.Flags.Has(FlagOneWay | FlagCancellable) {
		return Header{}, violation("header: flags OneWay and Cancellable together")
	}
	if h.Type == FrameRequest {
		if err := checkStreamFlags(h.Flags); err != nil {
			return Header{}, err
		}
	}
	switch {
	case rule.id == idZero && h.ID != 0:
		return Header{}, violation("header: %v frame with non-zero id %d", h.Type, h.ID)
	case rule.id == idNonZero && h.ID == 0:
		return Header{}, violation("header: %v frame with id 0", h.Type)
	}
	if h.Length > maxFrameSize {
		return Header{}, violation("header: payload length %d exceeds max frame size %d", h.Length, maxFrameSize)
	}
	if (h.Type == FramePing || h.Type == FramePong) && h.Length != pingSize {
		return Header{}, violation("header: %v payload length %d, want 8", h.Type, h.Length)
	}
	return h, nil
}

// checkStreamFlags applies the flag rules of a Request that opens a stream.
func checkStreamFlags(f Flags) error {
	if !f.Has(FlagStream) {
		if bad := f & (FlagHasMessage | FlagEndStream); bad != 0 {
			return violation("header: flags %v on a Request without Stream", bad)
		}
		return nil
	}
	if f.Has(FlagOneWay) {
		return violation("header: flags Stream and OneWay together")
	}
	if f.Has(FlagCompressed) && !f.Has(FlagHasMessage) {
		return violation("header: flag Compressed on a stream Request without HasMessage")
	}
	return nil
}

// checkFrame verifies that h announces a frame of type t carrying payload.
func checkFrame(h Header, t FrameType, payload []byte) error {
	if h.Type != t {
		return violation("%v: got a %v frame", t, h.Type)
	}
	if uint64(len(payload)) != uint64(h.Length) {
		return violation("%v: payload is %d bytes, header says %d", t, len(payload), h.Length)
	}
	return nil
}

// appendFrameHeader appends a header after checking that the payload size
// fits the 32-bit length field.
func appendFrameHeader(dst []byte, t FrameType, f Flags, id uint64, size int) ([]byte, error) {
	if uint64(size) > 0xFFFFFFFF {
		return dst, invalid("%v payload of %d bytes exceeds the 32-bit length field", t, size)
	}
	return AppendHeader(dst, Header{Type: t, Flags: f, Length: uint32(size), ID: id}), nil
}
