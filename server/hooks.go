package server

import "context"

// hooks are test hooks (export_test.go sets them); nil in production, one
// atomic pointer load on the request path.
type hooks struct {
	afterCapture func(gen uint64)
	afterAdmit   func()
	afterGrant   func(ctx context.Context)
	afterAck     func()
	// beforeDecode runs in the call's goroutine once it holds its decode
	// credit, just before the codec runs.
	beforeDecode func(ctx context.Context)
}
