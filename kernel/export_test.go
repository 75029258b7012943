package kernel

// Hooks exposes the interleaving points to the black-box tests.
type Hooks struct {
	AfterCapture func(*Permit)
	AfterPrepare func()
	BeforeCommit func()
	AfterEnqueue func(*Permit)
	AfterRelease func(*Permit)
}

// SetHooks installs h (nil removes them). Call it before traffic starts.
func (k *Kernel) SetHooks(h *Hooks) {
	if h == nil {
		k.hooks = nil
		return
	}
	k.hooks = &hooks{
		afterCapture: h.AfterCapture,
		afterPrepare: h.AfterPrepare,
		beforeCommit: h.BeforeCommit,
		afterEnqueue: h.AfterEnqueue,
		afterRelease: h.AfterRelease,
	}
}
