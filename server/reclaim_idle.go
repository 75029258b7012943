package server

import (
	"context"
	"time"
)

// idleReclaimInterval is how often the server runs the admission kernel's
// idle reclaim (kernel.Kernel.ReclaimIdle): a partition namespace that
// receives no new key still gives back its idle keys, within IdleTimeout
// (IdleTimeout/16 when full) plus this interval. Each run is made of
// bounded steps under a namespace's insert lock; requests for existing
// keys take no lock. Stop and Close end a run between two steps.
const idleReclaimInterval = time.Second

func newIdleReclaim(s *Server) *periodic {
	return &periodic{every: idleReclaimInterval, run: func(ctx context.Context) { s.kernel.ReclaimIdle(ctx) }}
}
