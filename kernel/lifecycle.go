package kernel

import (
	"context"
	"fmt"
)

// Enable publishes a program built from o. It applies only while admission
// is disabled (ErrModeConflict otherwise). New requests use the program from
// the instant of publication; requests that captured an earlier program
// keep it. Enable returns the new generation number.
//
// States of scopes that an earlier program's holders or waiters still
// occupy are reused, so accounting is never split: with limit 2, 2 holders,
// Disable then Enable with limit 2 still admits only 2 in total.
func (k *Kernel) Enable(o Options) (uint64, error) {
	return k.publish(o, func() error {
		if k.enabled {
			return fmt.Errorf("%w: Enable while enabled (generation %d); use Update", ErrModeConflict, k.gen.Load())
		}
		return nil
	})
}

// Update publishes a program built from the complete candidate o, derived
// from generation expected. It applies only while admission is enabled
// (ErrModeConflict otherwise) and only if expected is still the current
// generation (a *PublicationConflictError otherwise). The candidate is
// validated and prepared outside any lock; changes to stable state (a
// resize) are committed inside the publication section, atomically with the
// program's publication, so a losing or invalid candidate changes nothing.
func (k *Kernel) Update(expected uint64, o Options) (uint64, error) {
	return k.publish(o, func() error {
		if !k.enabled {
			return fmt.Errorf("%w: Update while disabled (generation %d); use Enable", ErrModeConflict, k.gen.Load())
		}
		if cur := k.gen.Load(); cur != expected {
			return &PublicationConflictError{Expected: expected, Current: cur}
		}
		return nil
	})
}

// Disable unpublishes the program: new requests bypass policy admission.
// Queued and active requests of earlier programs continue under the program
// they captured; nothing is cancelled. Disable while disabled changes
// nothing and returns the current generation.
func (k *Kernel) Disable() (uint64, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.sealed.Load() {
		return k.gen.Load(), ErrLifecycleClosed
	}
	if !k.enabled {
		return k.gen.Load(), nil
	}
	k.enabled = false
	k.gen.Add(1)
	k.cell.Clear()
	return k.gen.Load(), nil
}

// publish is the shared path of Enable and Update: prepare outside the lock,
// then check, bind, commit and publish inside it.
func (k *Kernel) publish(o Options, check func() error) (uint64, error) {
	if k.sealed.Load() {
		return k.gen.Load(), ErrLifecycleClosed
	}
	cand, err := k.prepare(o, k.clock.Now())
	if err != nil {
		return k.gen.Load(), err
	}
	if h := k.hooks; h != nil && h.afterPrepare != nil {
		h.afterPrepare()
	}

	k.mu.Lock()
	if k.sealed.Load() {
		k.mu.Unlock()
		return k.gen.Load(), ErrLifecycleClosed
	}
	if err := check(); err != nil {
		k.mu.Unlock()
		return k.gen.Load(), err
	}
	p, grown, err := k.bind(cand)
	if err != nil {
		k.mu.Unlock()
		return k.gen.Load(), err
	}
	k.enabled = true
	p.gen = k.gen.Add(1)
	k.live.Add(1)
	k.programs = append(k.programs, p)
	k.cell.Publish(p, p.gen, k.onProgramDrained)
	k.mu.Unlock()

	// Waiters of states whose limit may have grown can be granted now.
	k.dispatchStates(grown)
	return p.gen, nil
}

// Seal closes the lifecycle: nothing is published afterwards. Every queued
// waiter ends with an ErrUnavailable refusal, whatever state it waits on;
// new requests, and requests that captured a program before Seal but
// admit after it, are refused with ErrUnavailable; active permits finish
// normally. Nothing is granted after Seal. Seal is idempotent.
func (k *Kernel) Seal() {
	k.mu.Lock()
	if k.sealed.Load() {
		k.mu.Unlock()
		return
	}
	k.sealed.Store(true)
	k.enabled = false
	k.cell.Publish(&program{k: k, sealed: true, gen: k.gen.Load()}, k.gen.Load(), nil)
	k.mu.Unlock()

	// Every waiter, on whatever state it waits (one a later update
	// detached included), ends now; dispatchers that run after this see
	// sealed and grant nothing.
	k.qmu.Lock()
	k.sealLocked()
	k.qmu.Unlock()
	k.checkDrained()
}

// Drain waits until Seal has been called and every program has drained:
// no waiter, no permit and no program lease remains. It then reclaims every
// state. Drain may be called any number of times, concurrently; the drain
// itself happens exactly once. It returns ctx.Err() if ctx ends first.
func (k *Kernel) Drain(ctx context.Context) error {
	select {
	case <-k.drainedCh:
	case <-ctx.Done():
		return ctx.Err()
	}
	k.mu.Lock()
	k.sweepLocked()
	k.mu.Unlock()
	return nil
}

// Drained returns a channel closed once the kernel is sealed and drained.
func (k *Kernel) Drained() <-chan struct{} { return k.drainedCh }

// onProgramDrained runs exactly once per program, on the goroutine that
// ends its last lease (or on the publisher's, if it had none). It takes no
// lock: the registry is swept on the control path.
func (k *Kernel) onProgramDrained(p *program) {
	p.done.Store(true)
	for _, st := range p.states {
		st.refs.Add(-1)
	}
	if p.part != nil {
		p.part.refs.Add(-1)
	}
	k.live.Add(-1)
	k.checkDrained()
}
