package conformance

import (
	"runtime"
	"sync/atomic"
	"syscall"
)

// canInterrupt reports whether a victim can be interrupted on this
// platform.
const canInterrupt = true

// victim is the goroutine of a duel that the driver interrupts: on Linux
// it runs locked to its OS thread, and interrupt sends that thread SIGURG.
// The kernel suspends the thread wherever it is, at any instruction,
// inside the limiter's TryAcquire included, while Go's signal handler runs
// (a few microseconds): long enough for the driver, running on another
// CPU, to complete a critical sequence within the victim's call. Go's
// runtime uses SIGURG for preemption and ignores one it did not ask for
// (os/signal documents that programs may receive it spuriously), so the
// interruption changes nothing else.
type victim struct {
	tid atomic.Int64
	pid int
}

// enter locks the calling goroutine to its thread and makes it the one
// interrupt signals; the returned function undoes it.
func (v *victim) enter() (leave func()) {
	runtime.LockOSThread()
	v.pid = syscall.Getpid()
	v.tid.Store(int64(syscall.Gettid()))
	return func() {
		v.tid.Store(0)
		runtime.UnlockOSThread()
	}
}

// interrupt signals the victim's thread, if it has entered, and reports
// whether it did.
func (v *victim) interrupt() bool {
	tid := v.tid.Load()
	if tid == 0 {
		return false
	}
	return syscall.Tgkill(v.pid, int(tid), syscall.SIGURG) == nil
}
