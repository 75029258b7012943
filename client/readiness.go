package client

// WaitForReady makes the call wait, within its context, for the endpoint
// it needs to be connected. Without it, a call to an endpoint whose
// connection is gone and whose last dial failed does not wait for the
// endpoint's backoff: that attempt fails at once with the dial's
// Unavailable error (and the call moves on to another endpoint, or fails).
// With it, the attempt waits for the backoff and dials again, and failed
// dials do not count against MaxAttempts: the call ends when a connection
// is up and the call was made, or when its context ends (a call without a
// deadline then waits for as long as the endpoints stay unreachable) or the
// Client is closed.
func WaitForReady() CallOption { return waitForReadyOption{} }

type waitForReadyOption struct{}

func (waitForReadyOption) apply(o callOptions) callOptions { o.waitForReady = true; return o }
