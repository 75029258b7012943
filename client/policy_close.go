package client

import (
	"io"
	"sync"

	"github.com/sluicerpc/sluice/spi"
)

// Closing retired endpoint policies.
//
// A policy is retired when SetEndpointPolicy replaces it, or
// DisableEndpointPolicy or Client.Close removes it; the kernel's cell
// drains it once its last allowed attempt has reported. Its Close (when it
// is an io.Closer) then runs exactly once, and never where it could hurt:
//
//   - never under a lock of the client: a Close may read or change the
//     client's policy;
//   - when the policy drains while it is being retired (nothing was
//     outstanding), on the goroutine that retired it, after the client's
//     locks are released and before SetEndpointPolicy,
//     DisableEndpointPolicy or Client.Close returns;
//   - when the last report of an attempt drains it later, on a goroutine of
//     the client's own, so that the call that reported does not wait for
//     it;
//   - a panic in Close is recovered and logged, like a panic in Report.
//
// Client.Close waits for the Close of every policy retired before it,
// including the current one, whose last attempts end promptly since
// Client.Close fails them.

// retirement is the closing state of one published policy; the writer
// that retires the policy marks itself as its closer for the duration of
// the retirement.
type retirement struct {
	pc *policyControl

	mu       sync.Mutex
	retiring bool // a writer is retiring the policy: it closes it if it drains meanwhile
	drained  bool
}

// onDrain is the cell's drain callback for the policy; it must not block,
// and may run under the client's policy lock (a retirement) or on a call's
// goroutine (its last report).
func (r *retirement) onDrain(p spi.EndpointPolicy) {
	r.mu.Lock()
	r.drained = true
	byWriter := r.retiring
	r.mu.Unlock()
	if !byWriter {
		go r.pc.closeRetired(p)
	}
}

// retire retires the current policy, if any, with do (cell.Publish or
// cell.Clear), under pc.mu. It returns the retired policy when the caller
// must close it (it drained during the retirement), with closeRetired
// once pc.mu is released; nil otherwise.
func (pc *policyControl) retire(do func()) spi.EndpointPolicy {
	g, r := pc.cell.Load(), pc.cur
	if g == nil || r == nil {
		do()
		return nil
	}
	pc.pending.Add(1) // Done by closeRetired
	r.mu.Lock()
	r.retiring = true
	r.mu.Unlock()
	do()
	r.mu.Lock()
	r.retiring = false
	drained := r.drained
	r.mu.Unlock()
	if drained {
		return g.Value()
	}
	return nil
}

// closeRetired closes a drained policy that is an io.Closer, recovering
// and logging a panic, and counts the retirement done.
func (pc *policyControl) closeRetired(p spi.EndpointPolicy) {
	defer pc.pending.Done()
	cl, ok := p.(io.Closer)
	if !ok {
		return
	}
	defer func() {
		if r := recover(); r != nil {
			pc.logf("the endpoint policy panicked in Close", "panic", r)
		}
	}()
	if err := cl.Close(); err != nil {
		pc.logf("closing a retired endpoint policy failed", "error", err)
	}
}

// waitRetired waits until every retired policy was closed; called by
// Client.Close once no policy can be published any more.
func (pc *policyControl) waitRetired() { pc.pending.Wait() }
