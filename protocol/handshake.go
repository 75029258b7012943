package protocol

import "encoding/binary"

// Codec profile rules shared by Handshake and HandshakeAck.
const (
	// MaxCodecs is the maximum number of codec profiles in a handshake.
	MaxCodecs = 16
	// MaxCodecNameLen is the maximum length of a codec profile name; names
	// are 1..64 bytes of printable ASCII (0x20..0x7E).
	MaxCodecNameLen = 64
)

// Handshake is the decoded payload of the Handshake frame, the client's
// first frame (id 0).
//
// Payload layout: uint16 version, uint32 capabilities, uint32 max frame
// size the client accepts (>= 4096), uvarint codec count (<= 16) then each
// codec name (uvarint length + 1..64 printable ASCII bytes), auth payload
// (uvarint length + bytes, <= Limits.MaxAuthBytes). No trailing bytes.
type Handshake struct {
	Version      uint16
	Capabilities Capabilities
	// MaxFrameSize is the largest payload the client accepts.
	MaxFrameSize uint32
	// Codecs lists the codec profiles the client offers, in preference order.
	Codecs []string
	// Auth is the opaque authentication payload for the server's
	// authenticator; nil when empty.
	Auth []byte
}

// ParseHandshake decodes a Handshake frame payload into h. The codec names
// and Auth are copied; this allocates. If
// the version is not [Version], it sets hs.Version and returns
// [ErrUnsupportedVersion] without decoding the rest.
func ParseHandshake(h Header, payload []byte, lim Limits, hs *Handshake) error {
	if err := checkFrame(h, FrameHandshake, payload); err != nil {
		return err
	}
	c := cursor{b: payload, what: "handshake"}
	v, err := c.u16("version")
	if err != nil {
		return err
	}
	if v != Version {
		hs.Version = v
		return ErrUnsupportedVersion
	}
	caps, err := c.u32("capabilities")
	if err != nil {
		return err
	}
	maxFrame, err := c.u32("max frame size")
	if err != nil {
		return err
	}
	if maxFrame < MinFrameSize {
		return violation("handshake: max frame size %d below 4096", maxFrame)
	}
	codecs, err := parseCodecs(&c, nil)
	if err != nil {
		return err
	}
	auth, err := c.bytes("auth", uint64(lim.MaxAuthBytes))
	if err != nil {
		return err
	}
	if err := c.end(); err != nil {
		return err
	}
	hs.Version, hs.Capabilities, hs.MaxFrameSize, hs.Codecs = v, Capabilities(caps), maxFrame, codecs
	hs.Auth = nil
	if len(auth) > 0 {
		hs.Auth = append([]byte(nil), auth...)
	}
	return nil
}

// AppendHandshake appends a complete Handshake frame to dst. It returns an
// error wrapping [ErrInvalidValue], and dst unchanged, for version 0, a max
// frame size below 4096, more than 16 codecs or an invalid codec name. It
// does not check the auth payload against the server's MaxAuthBytes.
func AppendHandshake(dst []byte, hs *Handshake) ([]byte, error) {
	if hs.Version == 0 {
		return dst, invalid("handshake: version 0")
	}
	if hs.MaxFrameSize < MinFrameSize {
		return dst, invalid("handshake: max frame size %d below 4096", hs.MaxFrameSize)
	}
	cs, err := codecsSize(hs.Codecs)
	if err != nil {
		return dst, err
	}
	size := 2 + 4 + 4 + cs + bytesLen(len(hs.Auth))
	dst, err = appendFrameHeader(dst, FrameHandshake, 0, 0, size)
	if err != nil {
		return dst, err
	}
	dst = binary.LittleEndian.AppendUint16(dst, hs.Version)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(hs.Capabilities))
	dst = binary.LittleEndian.AppendUint32(dst, hs.MaxFrameSize)
	dst = appendStrings(dst, hs.Codecs)
	return appendBytes(dst, hs.Auth), nil
}

// parseCodecs reads a codec list, appending the names to dst.
func parseCodecs(c *cursor, dst []string) ([]string, error) {
	n, err := c.uvarint("codec count")
	if err != nil {
		return nil, err
	}
	if n > MaxCodecs {
		return nil, violation("%s: %d codecs, limit %d", c.what, n, MaxCodecs)
	}
	for i := uint64(0); i < n; i++ {
		name, err := c.bytes("codec name", MaxCodecNameLen)
		if err != nil {
			return nil, err
		}
		if !validCodecName(name) {
			return nil, violation("%s: invalid codec name %q", c.what, name)
		}
		dst = append(dst, string(name))
	}
	if len(dst) == 0 {
		dst = nil
	}
	return dst, nil
}

func codecsSize(codecs []string) (int, error) {
	if len(codecs) > MaxCodecs {
		return 0, invalid("%d codecs, limit %d", len(codecs), MaxCodecs)
	}
	size := uvarintLen(uint64(len(codecs)))
	for _, name := range codecs {
		if !validCodecName(name) {
			return 0, invalid("codec name %q", name)
		}
		size += bytesLen(len(name))
	}
	return size, nil
}

func appendStrings(dst []byte, ss []string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(ss)))
	for _, s := range ss {
		dst = appendString(dst, s)
	}
	return dst
}

func validCodecName[T string | []byte](s T) bool {
	if len(s) == 0 || len(s) > MaxCodecNameLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7E {
			return false
		}
	}
	return true
}

// MaxHandshakeSize is the largest Handshake payload a receiver enforcing
// lim can accept (every varint counted at its longest), capped at
// lim.MaxFrameSize: the bound for the first frame of a connection, so that
// a peer that has not completed the handshake cannot make its receiver
// read or hold a frame of the connection's full maximum size.
func MaxHandshakeSize(lim Limits) uint32 {
	const varint = binary.MaxVarintLen64
	n := 2 + 4 + 4 + varint + MaxCodecs*(varint+MaxCodecNameLen) + varint + uint64(lim.MaxAuthBytes)
	return uint32(min(n, uint64(lim.MaxFrameSize)))
}
