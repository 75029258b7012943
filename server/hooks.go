package server

import "context"

// hooks are test hooks (export_test.go sets them); nil in production, one
// atomic pointer load on the request path.
type hooks struct {
	afterCapture func(gen uint64)
	afterAdmit   func()
	afterGrant   func(ctx context.Context)
	afterAck     func()
}
