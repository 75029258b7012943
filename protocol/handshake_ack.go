package protocol

import (
	"encoding/binary"
	"time"
)

// Method table rules.
const (
	// MaxServices is the maximum number of services in the method table,
	// and MaxMethods the maximum number of methods per service.
	MaxServices = 65535
	MaxMethods  = 65535
	// MaxNameLen is the maximum length of a service or method name; names
	// are 1..255 bytes.
	MaxNameLen = 255
	// MaxAckEntries bounds the whole method table of a HandshakeAck:
	// services plus methods, all services together. A client holds the
	// table for the connection's life (a name and a route per method), on
	// every connection and reconnect, so it is bounded like the client's
	// own Handshake: a server whose table is larger cannot encode its ack
	// (server.New fails), and a client refuses a larger one.
	MaxAckEntries = 4096
)

// MaxHandshakeAckSize is the largest HandshakeAck payload a receiver
// enforcing lim can accept (every varint counted at its longest, the
// table at MaxAckEntries names of MaxNameLen bytes), capped at
// lim.MaxFrameSize: the bound for the answer to a Handshake, so that a
// server cannot make a client read or hold a frame of the connection's
// full maximum size before the connection exists.
func MaxHandshakeAckSize(lim Limits) uint32 {
	const varint = binary.MaxVarintLen64
	n := 2 + 5*4 + varint + MaxCodecs*(varint+MaxCodecNameLen) + varint + MaxAckEntries*(2*varint+MaxNameLen)
	return uint32(min(uint64(n), uint64(lim.MaxFrameSize)))
}

// ServiceInfo is one entry of the HandshakeAck method table. A service's id
// is its 0-based position in HandshakeAck.Services; a method's id is its
// 0-based position in Methods.
type ServiceInfo struct {
	Name    string
	Methods []string
}

// HandshakeAck is the decoded payload of the HandshakeAck frame, the
// server's answer to a Handshake (id 0).
//
// Payload layout: uint16 version, uint32 capabilities, uint32 max frame
// size the server accepts (>= 4096), uint32 max metadata bytes the server
// accepts, uint32 max concurrent calls per connection (advisory, 0 =
// unlimited), uint32 keepalive interval in milliseconds (0 = none),
// accepted codecs (as in Handshake), then the method table: uvarint
// service count (<= 65535), each service a name (uvarint length + 1..255
// bytes) and a uvarint method count (<= 65535) followed by the method names
// (1..255 bytes each), at most MaxAckEntries services and methods
// together. No trailing bytes.
type HandshakeAck struct {
	Version            uint16
	Capabilities       Capabilities
	MaxFrameSize       uint32
	MaxMetadataBytes   uint32
	MaxConcurrentCalls uint32
	// KeepaliveInterval is carried in whole milliseconds; 0 means no
	// keepalive.
	KeepaliveInterval time.Duration
	// Codecs lists the accepted codec profiles.
	Codecs   []string
	Services []ServiceInfo
}

// ParseHandshakeAck decodes a HandshakeAck frame payload into a. All
// strings are copied; this allocates. The version must be [Version].
func ParseHandshakeAck(h Header, payload []byte, a *HandshakeAck) error {
	if err := checkFrame(h, FrameHandshakeAck, payload); err != nil {
		return err
	}
	c := cursor{b: payload, what: "handshake ack"}
	var f [6]uint32
	v, err := c.u16("version")
	if err != nil {
		return err
	}
	if v != Version {
		return violation("handshake ack: version %d, want %d", v, Version)
	}
	for i, name := range [...]string{"capabilities", "max frame size", "max metadata bytes", "max concurrent calls", "keepalive interval"} {
		if f[i], err = c.u32(name); err != nil {
			return err
		}
	}
	if f[1] < MinFrameSize {
		return violation("handshake ack: max frame size %d below 4096", f[1])
	}
	codecs, err := parseCodecs(&c, nil)
	if err != nil {
		return err
	}
	nsvc, err := c.uvarint("service count")
	if err != nil {
		return err
	}
	if nsvc > MaxServices {
		return violation("handshake ack: %d services, limit %d", nsvc, MaxServices)
	}
	if nsvc > MaxAckEntries {
		return violation("handshake ack: %d services, more than the %d services and methods a method table may hold", nsvc, MaxAckEntries)
	}
	entries := nsvc
	// Every service takes at least 3 bytes; bound the allocation by the
	// payload rather than the announced count.
	var services []ServiceInfo
	if nsvc > 0 {
		services = make([]ServiceInfo, 0, min(nsvc, uint64(len(c.b)/3)))
	}
	for i := uint64(0); i < nsvc; i++ {
		name, err := c.bytes("service name", MaxNameLen)
		if err != nil {
			return err
		}
		if len(name) == 0 {
			return violation("handshake ack: empty service name")
		}
		nm, err := c.uvarint("method count")
		if err != nil {
			return err
		}
		if nm > MaxMethods {
			return violation("handshake ack: %d methods, limit %d", nm, MaxMethods)
		}
		if entries += nm; entries > MaxAckEntries {
			return violation("handshake ack: more than %d services and methods in the method table", MaxAckEntries)
		}
		var methods []string
		if nm > 0 {
			methods = make([]string, 0, min(nm, uint64(len(c.b)/2)))
		}
		for j := uint64(0); j < nm; j++ {
			m, err := c.bytes("method name", MaxNameLen)
			if err != nil {
				return err
			}
			if len(m) == 0 {
				return violation("handshake ack: empty method name")
			}
			methods = append(methods, string(m))
		}
		services = append(services, ServiceInfo{Name: string(name), Methods: methods})
	}
	if err := c.end(); err != nil {
		return err
	}
	*a = HandshakeAck{
		Version:            v,
		Capabilities:       Capabilities(f[0]),
		MaxFrameSize:       f[1],
		MaxMetadataBytes:   f[2],
		MaxConcurrentCalls: f[3],
		KeepaliveInterval:  time.Duration(f[4]) * time.Millisecond,
		Codecs:             codecs,
		Services:           services,
	}
	return nil
}

// AppendHandshakeAck appends a complete HandshakeAck frame to dst. It
// returns an error wrapping [ErrInvalidValue], and dst unchanged, for a
// version other than [Version], a max frame size below 4096, a negative or
// too long keepalive interval, invalid codecs, or a method table exceeding
// its limits or holding an empty or too long name.
func AppendHandshakeAck(dst []byte, a *HandshakeAck) ([]byte, error) {
	if a.Version != Version {
		return dst, invalid("handshake ack: version %d", a.Version)
	}
	if a.MaxFrameSize < MinFrameSize {
		return dst, invalid("handshake ack: max frame size %d below 4096", a.MaxFrameSize)
	}
	ms := a.KeepaliveInterval / time.Millisecond
	if ms < 0 || ms > 0xFFFFFFFF {
		return dst, invalid("handshake ack: keepalive interval %v out of range", a.KeepaliveInterval)
	}
	cs, err := codecsSize(a.Codecs)
	if err != nil {
		return dst, err
	}
	if len(a.Services) > MaxServices {
		return dst, invalid("handshake ack: %d services", len(a.Services))
	}
	entries := len(a.Services)
	for _, s := range a.Services {
		entries += len(s.Methods)
	}
	if entries > MaxAckEntries {
		return dst, invalid("handshake ack: the method table has %d services and methods, limit %d", entries, MaxAckEntries)
	}
	size := 2 + 5*4 + cs + uvarintLen(uint64(len(a.Services)))
	for _, s := range a.Services {
		if len(s.Name) == 0 || len(s.Name) > MaxNameLen {
			return dst, invalid("handshake ack: service name %q", s.Name)
		}
		if len(s.Methods) > MaxMethods {
			return dst, invalid("handshake ack: service %q has %d methods", s.Name, len(s.Methods))
		}
		size += bytesLen(len(s.Name)) + uvarintLen(uint64(len(s.Methods)))
		for _, m := range s.Methods {
			if len(m) == 0 || len(m) > MaxNameLen {
				return dst, invalid("handshake ack: method name %q", m)
			}
			size += bytesLen(len(m))
		}
	}
	dst, err = appendFrameHeader(dst, FrameHandshakeAck, 0, 0, size)
	if err != nil {
		return dst, err
	}
	dst = binary.LittleEndian.AppendUint16(dst, a.Version)
	for _, v := range [...]uint32{uint32(a.Capabilities), a.MaxFrameSize, a.MaxMetadataBytes, a.MaxConcurrentCalls, uint32(ms)} {
		dst = binary.LittleEndian.AppendUint32(dst, v)
	}
	dst = appendStrings(dst, a.Codecs)
	dst = binary.AppendUvarint(dst, uint64(len(a.Services)))
	for _, s := range a.Services {
		dst = appendString(dst, s.Name)
		dst = appendStrings(dst, s.Methods)
	}
	return dst, nil
}
