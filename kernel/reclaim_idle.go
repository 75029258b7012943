package kernel

import (
	"context"
	"slices"
)

// ReclaimIdle runs the idle-reclaim pass of every live partition
// namespace that has one under way or due (IdleTimeout after the previous
// pass began; IdleTimeout/16 for a full namespace) to its end, and returns
// the number of keys it reclaimed, or stops between two steps when ctx
// ends (the pass resumes where it stopped). A pass is made in steps of at most
// about 256 entries, each under the namespace's insert lock only: new keys
// are made between two steps, and requests for existing keys take no lock
// at all. It may be called from any goroutine; it never blocks on a
// request.
//
// New keys make the same steps, one each, so a namespace that receives
// new keys reclaims without it. ReclaimIdle is for the time when none
// arrive: without it, such a namespace keeps its idle keys (they cost
// memory, nothing else) until the next new key. The server calls it every
// second (server.Options: none to set); an embedder of the kernel alone
// calls it periodically.
func (k *Kernel) ReclaimIdle(ctx context.Context) int {
	k.mu.Lock()
	spaces := slices.Clone(k.spaces)
	k.mu.Unlock()
	reclaimed := 0
	for _, ns := range spaces {
		reclaimed += ns.reclaimPass(ctx, k.clock.Now)
	}
	return reclaimed
}
