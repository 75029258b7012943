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
// Concurrency state is keyed by scope (Global, a service, a method), so a
// resize binds to the same budget. Rate state is keyed by scope and lineage:
// a parameter change reconfigures the lineage in place, an algorithm
// replacement starts a new lineage that inherits the old usage as a barrier
// (requests of older programs are charged to the newest lineage), and a
// removed and re-added rate starts afresh. The optional partition layer
// ([PartitionPolicy]) gives every key of a selector its own states, in a
// namespace named by the selector's explicit identity. docs/admission.md
// states every transition and the test that checks it.
//
// The generation cell ([Cell]) under the kernel is a small generic primitive:
// publish a value, capture it with a lease, retire the previous value, and
// run its drain callback exactly once when its last lease ends.
package kernel
