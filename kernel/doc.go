// Package kernel is sluice's admission kernel: immutable admission programs
// published atomically over stable runtime state.
//
// A [Kernel] owns every counter that must survive configuration changes
// (concurrency budgets keyed by scope, the one shared queue accounting,
// waiters) and publishes immutable programs compiled from complete
// [Options] candidates. A request captures the current program exactly once
// ([Kernel.Capture], one atomic load; disabled admission is a nil program and
// costs nothing more), and that program decides everything about the request
// until its [Permit] is released: which scopes it acquires, whether it may
// queue, its queue delay, and which states its release returns units to.
//
// Lifecycle writers ([Kernel.Enable], [Kernel.Update], [Kernel.Disable],
// [Kernel.Seal]) are serialized. Update takes a complete candidate and the
// generation it was derived from; it is validated and prepared outside any
// lock and committed to the stable state inside a short publication section,
// only if that generation is still current. A rejected or losing candidate
// changes nothing.
//
// The generation cell ([Cell]) under the kernel is a small generic primitive:
// publish a value, capture it with a lease, retire the previous value, and
// run its drain callback exactly once when its last lease ends.
package kernel
