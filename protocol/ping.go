package protocol

const pingSize = 8

// ParsePing decodes the 8 opaque bytes of a Ping or Pong frame. It does not
// allocate.
func ParsePing(h Header, payload []byte) ([8]byte, error) {
	var data [8]byte
	if h.Type != FramePing && h.Type != FramePong {
		return data, violation("ping: got a %v frame", h.Type)
	}
	if len(payload) != pingSize || h.Length != pingSize {
		return data, violation("%v: payload is %d bytes, want 8", h.Type, len(payload))
	}
	copy(data[:], payload)
	return data, nil
}

// AppendPing appends a complete Ping frame carrying data to dst.
func AppendPing(dst []byte, data [8]byte) []byte {
	dst = AppendHeader(dst, Header{Type: FramePing, Length: pingSize})
	return append(dst, data[:]...)
}

// AppendPong appends a complete Pong frame to dst; data echoes the Ping's.
func AppendPong(dst []byte, data [8]byte) []byte {
	dst = AppendHeader(dst, Header{Type: FramePong, Length: pingSize})
	return append(dst, data[:]...)
}
