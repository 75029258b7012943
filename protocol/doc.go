// Package protocol implements version 1 of the sluice wire protocol: the
// 16-byte frame header, the payload of every frame type, a buffered frame
// [Reader] and a coalescing frame [Writer].
//
// The specification lives in docs/protocol.md; this package is its reference
// implementation and imports only the standard library.
//
// # Ownership and allocation
//
// Decoders (the Parse functions) never copy frame bodies or metadata: the
// Body of a parsed [Request], [Response] or [Message] and every key and
// value of a parsed [Metadata] alias the payload slice passed in. When the payload
// comes from [Reader.ReadFrame], it is valid only until the next ReadFrame
// call; a caller that keeps any of it longer must copy it. ParseHeader,
// ParseRequest, ParseResponse, ParseMessage, ParseEnd, ParseWindowUpdate,
// ParseCancel and ParsePing do not allocate (once a reused Metadata has
// grown to the entry count).
// The connection-setup decoders ([ParseHandshake], [ParseHandshakeAck]) and
// the decoders of rare frames ([ParseError], [ParseGoAway]) copy their
// strings and may allocate.
//
// Encoders (the Append functions) append one complete frame, header and
// payload, to dst and return the extended slice, like the strconv Append
// functions; they allocate only when dst lacks capacity. Encoders validate
// their input against the fixed rules of the protocol and return an error
// wrapping [ErrInvalidValue] instead of writing a frame the peer would reject.
// They cannot know the peer's negotiated limits: a sender checks the frame
// length against the peer's maximum frame size (see [Limits]) itself.
//
// When a Parse function returns an error, the contents of its destination
// value are unspecified.
//
// # Violations
//
// Every malformed input is reported as a [*ProtocolError]. A violation is
// fatal to the connection: the receiver closes it (after optionally sending
// a connection-level Error frame) and never tries to resynchronize on the
// byte stream. Rules that depend on the connection's role and state
// (direction of frame types and of the stream frames' flags, handshake
// order, negotiated capabilities, stream state, flow-control credit) are
// left to the connection layer; [IDSequence] helps with request id order,
// [MessageFlagsFromClient] and its siblings with the stream frames'
// direction (stream.go lists who checks what).
package protocol

const (
	// Version is the protocol version this package speaks.
	Version = 1

	// Magic is the first byte of every frame header.
	Magic = 0xA7

	// HeaderSize is the size in bytes of the fixed frame header.
	HeaderSize = 16

	// MinFrameSize is the smallest maximum frame size a peer may announce
	// or a [Limits] value may hold.
	MinFrameSize = 4096
)
