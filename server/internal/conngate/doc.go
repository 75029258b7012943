// Package conngate admits accepted connections in the server's accept
// loop, under three live bounds: connections alive (accepted and not yet
// cleaned up), connections still in handshake (TLS, protocol handshake
// and authentication, until the Ready transition), and connections still
// in handshake from one source address (an IPv4 address, or an IPv6 /64:
// [SourceKey]), so that one peer cannot take every handshake slot.
//
// Admission is one non-blocking call: the accept loop calls
// [Slot.AdmitFrom] right after Accept with the connection's source address
// ([SourceAddr]) and, on refusal, closes the connection inline, with no
// goroutine and no buffers, and counts the refusal with its [Reason]
// ("connection_limit", "handshake_limit" or "handshake_per_address"). An
// admitted connection holds one connection slot, one handshake slot and
// one handshake of its source address; the handshake slot and the
// address's handshake are returned together exactly once, at the Ready
// transition ([Slot.HandshakeDone]) or at terminal cleanup
// ([Slot.Release]), and the connection slot exactly once at terminal
// cleanup.
//
// The bounds can be changed at runtime ([Gate.SetLimits]); lowering them
// closes nothing.
package conngate
