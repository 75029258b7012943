package bench_test

import (
	"context"
	"fmt"
	"testing"

	"golang.org/x/sync/semaphore"
	"golang.org/x/time/rate"

	"github.com/sluicerpc/sluice/kernel"
	"github.com/sluicerpc/sluice/limiters/concurrency"
	"github.com/sluicerpc/sluice/spi"
)

// The peers benchmarks (go test -bench BenchmarkPeers -benchmem) measure one
// immediate grant and its release in sluice's kernel and in other
// libraries' admission primitives, in the same run and with ample capacity.
// Their allocation counts are deterministic and printed here; their times
// are not (docs/benchmarks.md has the figures).
func Example() {
	var cb kernel.CatalogBuilder
	op := cb.MustAdd("bench", "Op")
	k, err := kernel.New(kernel.Config{Catalog: cb.Build()})
	if err != nil {
		panic(err)
	}
	if _, err := k.Enable(kernel.Options{Global: kernel.Rule{Limits: []spi.Spec{concurrency.Spec(1 << 20)}}}); err != nil {
		panic(err)
	}
	ctx := context.Background()
	req := kernel.Request{Method: op}
	var p kernel.Permit // a server keeps it in its pooled per-call state
	sluice := func() {
		if k.Capture(&p) {
			if err := p.Admit(ctx, req); err != nil {
				panic(err)
			}
			p.Release()
		}
	}
	sem := semaphore.NewWeighted(1 << 20)
	weighted := func() {
		if !sem.TryAcquire(1) {
			panic("refused")
		}
		sem.Release(1)
	}
	lim := rate.NewLimiter(rate.Inf, 1)
	allow := func() {
		if !lim.Allow() {
			panic("refused")
		}
	}
	fmt.Println("sluice kernel:", testing.AllocsPerRun(1000, sluice))
	fmt.Println("x/sync/semaphore:", testing.AllocsPerRun(1000, weighted))
	fmt.Println("x/time/rate:", testing.AllocsPerRun(1000, allow))
	// Output:
	// sluice kernel: 0
	// x/sync/semaphore: 0
	// x/time/rate: 0
}
