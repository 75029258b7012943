package server

import (
	"context"
	"sync"
	"time"
)

// periodic runs one function every interval on a goroutine of its own,
// from the first start until start's context ends; stop waits for that
// goroutine. It starts at most once and never after stop. The interval
// runs on the time package's clock (testing/synctest fakes it in tests),
// not Options.Clock, which drives admission only.
type periodic struct {
	every time.Duration
	run   func(ctx context.Context) // ctx: start's, done once stop may be waiting

	mu      sync.Mutex
	started bool
	stopped bool
	wg      sync.WaitGroup
}

// start starts the goroutine until ctx ends, once; never after stop.
func (p *periodic) start(ctx context.Context) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.started || p.stopped {
		return
	}
	p.started = true
	p.wg.Go(func() {
		t := time.NewTicker(p.every)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				p.run(ctx)
			case <-ctx.Done():
				return
			}
		}
	})
}

// stop waits for the goroutine to end (start's ctx must be done); it may
// be called more than once, and before any start.
func (p *periodic) stop() {
	p.mu.Lock()
	p.stopped = true
	p.mu.Unlock()
	p.wg.Wait()
}
