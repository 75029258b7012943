package kernel_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/kernel"
	"github.com/sluicerpc/sluice/limiters/concurrency"
	"github.com/sluicerpc/sluice/spi"
)

// The storms' holder ledgers count a grant after Admit returns and
// uncount it before Release: a ledger never sees more than the holders
// that certainly overlap. The checks here record the storm's history
// instead (every Admit and Release, with its call and return on one
// logical clock) and ask porcupine (github.com/anishathalye/porcupine, the
// linearizability checker etcd's tests use) whether some sequential
// execution of a concurrency limit could have produced it: per scope, a
// grant when fewer than limit units are held, a refusal at any time (the
// kernel may be stricter for an instant, never looser), a release of a
// held unit. A history no sequential execution explains fails the test
// and porcupine's visualization is written beside it (issue 24 section 3).

// admissionOp is one operation of a scope's history.
type admissionOp struct {
	scope   string
	limit   int
	release bool
}

// admissionModel is the sequential specification of a concurrency limit,
// per scope: the state is the number of units held.
var admissionModel = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		by := map[string][]porcupine.Operation{}
		var order []string
		for _, op := range history {
			s := op.Input.(admissionOp).scope
			if _, ok := by[s]; !ok {
				order = append(order, s)
			}
			by[s] = append(by[s], op)
		}
		out := make([][]porcupine.Operation, 0, len(order))
		for _, s := range order {
			out = append(out, by[s])
		}
		return out
	},
	Init: func() any { return 0 },
	Step: func(state, input, output any) (bool, any) {
		held, in := state.(int), input.(admissionOp)
		switch {
		case in.release:
			return held > 0, held - 1
		case output.(bool): // granted
			return held < in.limit, held + 1
		default: // refused: allowed at any time
			return true, held
		}
	},
	DescribeOperation: func(input, output any) string {
		in := input.(admissionOp)
		if in.release {
			return "release " + in.scope
		}
		if output.(bool) {
			return "grant " + in.scope
		}
		return "refuse " + in.scope
	},
	DescribeState: func(state any) string { return fmt.Sprintf("%d held", state.(int)) },
}

// historyRecorder keeps one worker's operations; the clock is shared.
type historyRecorder struct {
	clock  *atomic.Int64
	client int
	ops    []porcupine.Operation
}

// admit records p.Admit(req) as one operation per scope the request
// passes (scopes with their limits); it reports whether it was granted.
func (r *historyRecorder) admit(p *kernel.Permit, req kernel.Request, scopes []string, limit int) bool {
	call := r.clock.Add(1)
	err := p.Admit(context.Background(), req)
	ret := r.clock.Add(1)
	for _, s := range scopes {
		r.ops = append(r.ops, porcupine.Operation{ClientId: r.client, Input: admissionOp{scope: s, limit: limit}, Call: call, Output: err == nil, Return: ret})
	}
	return err == nil
}

// release records p.Release as one operation per scope.
func (r *historyRecorder) release(p *kernel.Permit, scopes []string, limit int) {
	call := r.clock.Add(1)
	p.Release()
	ret := r.clock.Add(1)
	for _, s := range scopes {
		r.ops = append(r.ops, porcupine.Operation{ClientId: r.client, Input: admissionOp{scope: s, limit: limit, release: true}, Call: call, Output: false, Return: ret})
	}
}

// checkLinearizable checks the recorders' histories; on failure it writes
// porcupine's visualization and names the file.
func checkLinearizable(t *testing.T, recs []*historyRecorder) porcupine.CheckResult {
	t.Helper()
	var history []porcupine.Operation
	for _, r := range recs {
		history = append(history, r.ops...)
	}
	res, info := porcupine.CheckOperationsVerbose(admissionModel, history, 5*time.Minute)
	if res != porcupine.Ok {
		path := filepath.Join(t.TempDir(), "history.html")
		if dir := os.Getenv("SLUICE_PORCUPINE_DIR"); dir != "" {
			path = filepath.Join(dir, t.Name()+".html")
		}
		if err := porcupine.VisualizePath(admissionModel, info, path); err != nil {
			t.Logf("visualization: %v", err)
		} else {
			t.Logf("porcupine's visualization of the history: %s (set SLUICE_PORCUPINE_DIR to keep it)", path)
		}
	}
	return res
}

// leakyConcKind is a broken third-party concurrency kind: it grants one
// unit over its limit. The checker must call its histories impossible.
type leakyConcKind struct{ lockedConcKind }

func (leakyConcKind) Name() string { return "example.com/leaky" }
func (leakyConcKind) New(p spi.Params, _ time.Time) (spi.Limiter, error) {
	return &leakyConc{lockedConc{limit: p[concurrency.ParamLimit]}}, nil
}

type leakyConc struct{ lockedConc }

func (l *leakyConc) TryAcquire(_ time.Time, n int64) spi.Decision {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held+n > l.limit+1 {
		return spi.RefuseUntilRelease()
	}
	l.held += n
	return spi.Grant()
}

// TestStressHistoriesAreLinearizable: the storm of kind swaps (the global
// scope, service echo, method echo/Say and the partition rule each
// switching between the built-in concurrency kind and a third party's,
// every limit 4, a queue) recorded and checked by porcupine; and the
// checker's own test: a kernel over a kind that grants one unit too many
// gives a history porcupine calls illegal.
func TestStressHistoriesAreLinearizable(t *testing.T) {
	const (
		workers = 6
		limit   = 4
		tenants = 3
	)
	// make test: 10,000 grants (65,000 operations, about 3 s to check
	// with -race); make stress: at most 400,000 (the check is about
	// linear in the history: 100,000 grants took 30 s without -race,
	// and the history is kept in memory).
	target := min(stressGrants(t, 10_000), 400_000)
	reg := &spi.Registry{}
	reg.MustRegister(concurrency.Kind{})
	reg.MustRegister(lockedConcKind{})
	reg.MustRegister(leakyConcKind{})
	var b kernel.CatalogBuilder
	say := b.MustAdd("echo", "Say")
	shout := b.MustAdd("echo", "Shout")
	ping := b.MustAdd("other", "Ping")
	k, err := kernel.New(kernel.Config{Catalog: b.Build(), Registry: reg})
	require.NoError(t, err)

	kind := func(i, bit int) spi.Spec {
		if i>>bit&1 == 1 {
			return lockedSpec(limit)
		}
		return concurrency.Spec(limit)
	}
	rule := func(s spi.Spec) kernel.Rule { return kernel.Rule{Limits: []spi.Spec{s}} }
	selector := kernel.Selector{Name: "identity", Version: 1, Key: func(f kernel.Facts) (string, bool) { return f.Identity, true }}
	opts := func(i int) kernel.Options {
		return kernel.Options{
			Global:   rule(kind(i, 0)),
			Services: map[string]kernel.Rule{"echo": rule(kind(i, 1))},
			Methods:  map[string]kernel.Rule{echoSay: rule(kind(i, 2))},
			Partition: &kernel.PartitionPolicy{
				Selector: selector, MaxPartitions: 16, IdleTimeout: time.Minute,
				Rule: rule(kind(i, 3)),
			},
			Queue: kernel.QueuePolicy{MaxQueuedCalls: 16, MaxQueuedBytes: 1 << 20, MaxQueueDelay: 5 * time.Millisecond},
		}
	}
	_, err = k.Enable(opts(0))
	require.NoError(t, err)

	var (
		clock   atomic.Int64
		grants  atomic.Int64
		swaps   atomic.Int64
		stop    = make(chan struct{})
		updater sync.WaitGroup
		updErr  error
	)
	updater.Go(func() {
		defer close(stop)
		for i := 1; grants.Load() < target; i++ {
			if _, err := k.Update(k.Generation(), opts(i^(i>>1))); err != nil {
				updErr = err
				return
			}
			swaps.Add(1)
			runtime.Gosched()
		}
	})
	ids := [tenants]string{"t0", "t1", "t2"}
	recs := make([]*historyRecorder, workers)
	var work sync.WaitGroup
	for w := range workers {
		recs[w] = &historyRecorder{clock: &clock, client: w}
		work.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 243))
			rec := recs[w]
			var p kernel.Permit
			for {
				select {
				case <-stop:
					return
				default:
				}
				m, tn := say, rng.IntN(tenants)
				scopes := []string{"global", "tenant " + ids[tn], "echo", "echo/Say"}
				switch rng.IntN(4) {
				case 0:
					m, scopes = shout, scopes[:3]
				case 1:
					m, scopes = ping, scopes[:2]
				}
				if !k.Capture(&p) {
					continue
				}
				if !rec.admit(&p, kernel.Request{Method: m, Identity: ids[tn]}, scopes, limit) {
					continue
				}
				grants.Add(1)
				for range rng.IntN(3) {
					runtime.Gosched()
				}
				rec.release(&p, scopes, limit)
			}
		})
	}
	updater.Wait()
	work.Wait()
	require.NoError(t, updErr)
	ops := 0
	for _, r := range recs {
		ops += len(r.ops)
	}
	start := time.Now()
	require.Equal(t, porcupine.Ok, checkLinearizable(t, recs), "a history no sequential execution of the limits explains")
	t.Logf("%d grants, %d kind swaps, %d operations over 6 scopes checked linearizable in %v", grants.Load(), swaps.Load(), ops, time.Since(start).Round(time.Millisecond))

	// The checker's own test: the global limit on the leaky kind admits
	// a fifth holder; porcupine must call that history illegal.
	leaky := opts(0)
	leaky.Global = rule(spi.Spec{Kind: "example.com/leaky", Params: spi.Params{concurrency.ParamLimit: limit}})
	_, err = k.Update(k.Generation(), leaky)
	require.NoError(t, err)
	rec := &historyRecorder{clock: &clock}
	permits := make([]kernel.Permit, limit+1)
	for i := range permits {
		require.True(t, k.Capture(&permits[i]))
		require.True(t, rec.admit(&permits[i], kernel.Request{Method: ping, Identity: ids[i%tenants]}, []string{"global"}, limit), "the leaky kind grants %d", i+1)
	}
	for i := range permits {
		rec.release(&permits[i], []string{"global"}, limit)
	}
	require.Equal(t, porcupine.Illegal, checkLinearizable(t, []*historyRecorder{rec}), "five holders under a limit of 4 must be illegal")
}
