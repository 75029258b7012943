//go:build !linux

package conformance

// canInterrupt reports whether a victim can be interrupted on this
// platform.
const canInterrupt = false

// victim is the goroutine of a duel that the driver would interrupt; off
// Linux it cannot be, and the duels rely on the scheduler alone
// suspending it inside the limiter.
type victim struct{}

func (*victim) enter() (leave func()) { return func() {} }
func (*victim) interrupt() bool       { return false }
