// Package window provides sluice's fixed-window and sliding-window rate
// limiters, registered in spi.DefaultRegistry as kinds "fixedwindow"
// (parameters "permitLimit" and "window") and "slidingwindow" (parameters
// "permitLimit", "window" and "segments"). Both are spi.ClassRate limiters
// and implement spi.Handover and spi.Inheritor, so the kernel can replace
// one algorithm by another at a scope without losing the usage.
//
// Both can be reconfigured live without ever handing out capacity that
// neither the old nor the new configuration allows (no free burst): state
// carries over and is never reset. A fixed window keeps its current window
// and count across a limit change; a sliding window keeps its segments.
// What cannot be mapped exactly onto the new windows or segments (a
// window-length change, usage inherited from another algorithm) becomes a
// barrier: units that count against the limit until an explicit instant,
// chosen so that the limiter is never looser than either configuration,
// only stricter for a while.
//
// Every method takes the current time; windows are aligned to the
// limiter's origin (its creation, or the publication of a window-length
// change), not to the wall clock. A refusal carries the exact instant at
// which the same request would be granted if nothing else happened.
//
// The immediate path (TryAcquire, Cancel) takes no lock and allocates
// nothing; see Fixed and Sliding for how each keeps its state.
package window

import "errors"

// ErrSealed is returned by Reconfigure on a limiter that was sealed (see
// spi.Handover): its usage now belongs to its successor.
var ErrSealed = errors.New("window: limiter is sealed")
