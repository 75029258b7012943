// Package conngate admits accepted connections in the server's accept
// loop, under two live bounds: connections alive (accepted and not yet
// cleaned up) and connections still in handshake (TLS, protocol handshake
// and authentication, until the Ready transition).
//
// Admission is one non-blocking call that allocates nothing: the accept
// loop calls [Slot.Admit] right after Accept and, on refusal, closes the
// connection inline, with no goroutine and no buffers, and counts the
// refusal with its [Reason] ("connection_limit" or "handshake_limit"). An
// admitted connection holds one connection slot and one handshake slot; the
// handshake slot is returned exactly once, at the Ready transition
// ([Slot.HandshakeDone]) or at terminal cleanup ([Slot.Release]), and the
// connection slot exactly once at terminal cleanup.
//
// Both bounds can be changed at runtime ([Gate.SetLimits]); lowering them
// closes nothing.
package conngate
