package protocol

// Capabilities is the 32-bit capability bitmask exchanged in the
// handshake. Receivers ignore bits they do not know (forward
// compatibility); they are preserved by the decoders.
type Capabilities uint32

const (
	CapCancel      Capabilities = 1 // Cancel frames are understood
	CapOneWay      Capabilities = 2 // one-way calls are supported
	CapCompression Capabilities = 4 // compressed bodies are supported
	CapKeepalive   Capabilities = 8 // Ping/Pong keepalive is supported
	// CapStreaming: streams (a Request with FlagStream, and the Message,
	// End and WindowUpdate frames) are supported. Without it on both
	// sides, any of them is a violation (the endpoint checks).
	CapStreaming Capabilities = 16
)

// Has reports whether all bits of v are set in c.
func (c Capabilities) Has(v Capabilities) bool { return c&v == v }
