package server

// TestHooks are called at interleaving points of the request path, for
// deterministic tests.
type TestHooks struct {
	// AfterCapture runs on the reader right after a request captured the
	// admission program numbered gen (not when admission is disabled).
	AfterCapture func(gen uint64)
}

// SetTestHooks installs h.
func SetTestHooks(s *Server, h *TestHooks) { s.hooks.Store(&hooks{afterCapture: h.AfterCapture}) }
