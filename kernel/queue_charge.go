package kernel

// ChargeQueued adds n >= 0 bytes to the queue accounting of a request
// that waits in the queue: stream data that arrived for it after Start
// (the request's own Bytes were charged at enqueue). The bytes join its
// own and the kernel's shared total, within the MaxQueuedBytes of the
// program it captured, and are given back with the rest when it leaves
// the queue, whatever its outcome (grant, refusal, cancel, Seal).
//
// It returns true when it charged them, and also, charging nothing, when
// the request is not waiting (never queued, or its wait is already
// decided): its bytes are no longer the queue's. It returns false, charging
// nothing, when the queue cannot hold them: the caller refuses the request
// (its reason is ReasonQueueFull) by ending its wait, for instance by
// cancelling the context Wait was given.
//
// It may be called from any goroutine while another is in Wait; it never
// blocks beyond the queue's lock and allocates nothing.
func (p *Permit) ChargeQueued(n int64) bool {
	if n < 0 {
		panic("kernel: ChargeQueued with negative bytes")
	}
	w := p.queued.Load()
	if w == nil || n == 0 {
		return true
	}
	k := w.p.lease.g.value.k
	k.qmu.Lock()
	defer k.unlockQ()
	if w.outcome != outcomeWaiting {
		return true
	}
	if k.queuedBytes+n > w.maxBytes || w.bytes+n > w.maxBytes {
		return false
	}
	w.bytes += n
	k.queuedBytes += n
	return true
}
