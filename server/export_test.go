package server

import "context"

// TestHooks are called at interleaving points of the request path, for
// deterministic tests.
type TestHooks struct {
	// AfterCapture runs on the reader right after a request captured the
	// admission program numbered gen (not when admission is disabled).
	AfterCapture func(gen uint64)
	// AfterAdmit runs on the accept loop right after a connection took
	// its connection and handshake slots, before it is registered.
	AfterAdmit func()
	// AfterGrant runs on a queued call's goroutine right after admission
	// granted it, with the call's context.
	AfterGrant func(ctx context.Context)
	// AfterAck runs on a connection's goroutine right after it wrote the
	// HandshakeAck.
	AfterAck func()
	// BeforeDecode runs on a compressed call's goroutine once it holds
	// its decode credit, just before the codec runs, with the call's
	// context.
	BeforeDecode func(ctx context.Context)
}

// SetTestHooks installs h.
func SetTestHooks(s *Server, h *TestHooks) {
	s.hooks.Store(&hooks{afterCapture: h.AfterCapture, afterAdmit: h.AfterAdmit, afterGrant: h.AfterGrant, afterAck: h.AfterAck, beforeDecode: h.BeforeDecode})
}

// EnforcedCallCapacity is the call capacity the server enforces, per
// connection and per server (governor.MaxCallCapacity for "no bound").
func EnforcedCallCapacity(s *Server) (perConn, perServer int) {
	return s.connCaps.Capacity(), s.calls.Snapshot().Capacity
}
