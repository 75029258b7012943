package kernel_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/kernel"
	"github.com/sluicerpc/sluice/limiters/concurrency"
	"github.com/sluicerpc/sluice/spi"
)

// lockedConcKind is a third party's concurrency kind, built differently
// from the built-in one (a mutex and a counter): what a concurrency kind
// replacement hands holders over to and from.
type lockedConcKind struct{}

func (lockedConcKind) Name() string                { return "example.com/locked" }
func (lockedConcKind) Class() spi.Class            { return spi.ClassConcurrency }
func (lockedConcKind) Validate(p spi.Params) error { return concurrency.Kind{}.Validate(p) }
func (lockedConcKind) New(p spi.Params, _ time.Time) (spi.Limiter, error) {
	return &lockedConc{limit: p[concurrency.ParamLimit]}, nil
}

func lockedSpec(limit int64) spi.Spec {
	return spi.Spec{Kind: "example.com/locked", Params: spi.Params{concurrency.ParamLimit: limit}}
}

type lockedConc struct {
	mu          sync.Mutex
	limit, held int64
}

func (l *lockedConc) TryAcquire(_ time.Time, n int64) spi.Decision {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held+n > l.limit {
		return spi.RefuseUntilRelease()
	}
	l.held += n
	return spi.Grant()
}

func (l *lockedConc) Release(_ time.Time, n int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n > l.held {
		panic(fmt.Sprintf("lockedConc: released %d, held %d", n, l.held))
	}
	l.held -= n
}

func (l *lockedConc) Cancel(now time.Time, n int64) { l.Release(now, n) }

func (l *lockedConc) Reconfigure(_ time.Time, p spi.Params) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.limit = p[concurrency.ParamLimit]
	return nil
}

func (l *lockedConc) Snapshot(time.Time) spi.Snapshot {
	l.mu.Lock()
	defer l.mu.Unlock()
	return spi.Snapshot{Kind: "example.com/locked", Limit: l.limit, InUse: l.held, Available: max(0, l.limit-l.held)}
}

// The concurrency kind of the global and a method scope alternates
// between the built-in limiter and a third party's on every step, while
// workers hold grants across several steps and queue behind the limits.
// The limits never change, so the invariant is exact at every instant: at
// most 3 holders globally and 2 of the method, whichever state (old or
// new kind) each holder's unit is on. Every carried unit must come back:
// the counters end at zero and the old states are reclaimed.
func TestStressConcurrencyKindReplacement(t *testing.T) {
	const (
		workers     = 8
		steps       = 60
		globalLimit = 3
		methodLimit = 2
	)
	reg := &spi.Registry{}
	reg.MustRegister(concurrency.Kind{})
	reg.MustRegister(lockedConcKind{})
	var b kernel.CatalogBuilder
	say := b.MustAdd("echo", "Say")
	shout := b.MustAdd("echo", "Shout")
	k, err := kernel.New(kernel.Config{Catalog: b.Build(), Registry: reg})
	require.NoError(t, err)

	opts := func(i int) kernel.Options {
		gk, mk := concurrency.Spec(globalLimit), lockedSpec(methodLimit)
		if i%2 == 1 {
			gk, mk = lockedSpec(globalLimit), concurrency.Spec(methodLimit)
		}
		if i%3 == 2 { // both the same kind now and then
			mk = concurrency.Spec(methodLimit)
		}
		return kernel.Options{
			Global:  kernel.Rule{Limits: []spi.Spec{gk}},
			Methods: map[string]kernel.Rule{echoSay: {Limits: []spi.Spec{mk}}},
			Queue:   kernel.QueuePolicy{MaxQueuedCalls: 64, MaxQueuedBytes: 1 << 20, MaxQueueDelay: time.Second},
		}
	}

	var (
		global, method atomic.Int64
		ops            atomic.Int64
	)
	var bad violations
	stop := make(chan struct{})
	var updater sync.WaitGroup
	updater.Go(func() {
		defer close(stop)
		_, err := k.Enable(opts(0))
		require.NoError(t, err)
		for i := 1; i < steps; i++ {
			deadline := time.Now().Add(20 * time.Millisecond) // pacing only
			for s := ops.Load(); ops.Load()-s < 50 && time.Now().Before(deadline); {
				runtime.Gosched()
			}
			if i%10 == 9 {
				_, err := k.Disable()
				require.NoError(t, err)
				_, err = k.Enable(opts(i))
				require.NoError(t, err)
				continue
			}
			_, err := k.Update(k.Generation(), opts(i))
			require.NoError(t, err)
		}
	})

	var work sync.WaitGroup
	for w := range workers {
		work.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 5))
			var p kernel.Permit
			for {
				select {
				case <-stop:
					return
				default:
				}
				ops.Add(1)
				m := say
				if rng.IntN(3) == 0 {
					m = shout
				}
				if !k.Capture(&p) {
					continue
				}
				if err := p.Admit(context.Background(), kernel.Request{Method: m}); err != nil {
					p.Release()
					continue
				}
				if n := global.Add(1); n > globalLimit {
					bad.fail("%d global holders, limit %d", n, globalLimit)
				}
				if m == say {
					if n := method.Add(1); n > methodLimit {
						bad.fail("%d holders of echo/Say, limit %d", n, methodLimit)
					}
				}
				// Hold a moment, or across the next publications.
				if rng.IntN(4) == 0 {
					until := k.Generation() + 1 + rng.Uint64N(3)
					for k.Generation() < until {
						select {
						case <-stop:
							until = 0
						default:
							runtime.Gosched()
						}
					}
				} else {
					runtime.Gosched()
				}
				if m == say {
					method.Add(-1)
				}
				global.Add(-1)
				p.Release()
			}
		})
	}
	updater.Wait()
	work.Wait()
	bad.requireNone(t)

	_, err = k.Disable()
	require.NoError(t, err)
	st := k.Stats()
	require.Zero(t, st.LivePrograms)
	require.Zero(t, st.States, "every old state reclaimed and nothing carried: %+v", st.Scopes)
	require.Zero(t, st.QueuedCalls)
	require.Zero(t, st.DoubleReleases)
	t.Logf("%d ops over %d generations", ops.Load(), k.Generation())
}

// A state that a live program's requests still reach keeps its successors:
// here the successor of a replaced global kind is bound by no program and
// carries nothing, but a waiter of the first program will be charged to it;
// a later Enable must bind it, not a new state beside it.
func TestSuccessorOfALiveStateIsKept(t *testing.T) {
	f := newFixture(t)
	reg := &spi.Registry{}
	reg.MustRegister(concurrency.Kind{})
	reg.MustRegister(lockedConcKind{})
	var b kernel.CatalogBuilder
	f.say, f.shout = b.MustAdd("echo", "Say"), b.MustAdd("echo", "Shout")
	k, err := kernel.New(kernel.Config{Catalog: b.Build(), Registry: reg})
	require.NoError(t, err)
	f.k = k
	k.SetHooks(&kernel.Hooks{AfterEnqueue: func(p *kernel.Permit) { f.enqueued <- p }})
	q := kernel.QueuePolicy{MaxQueuedCalls: 8, MaxQueuedBytes: 1024, MaxQueueDelay: time.Minute}
	method := map[string]kernel.Rule{echoSay: conc(1)}

	f.enable(kernel.Options{Methods: method, Queue: q})
	h0 := f.grant(f.say) // holds the method unit only
	f.update(kernel.Options{Global: conc(1), Methods: method, Queue: q})
	w := f.queue(context.Background(), kernel.Request{Method: f.say}) // on the method state
	f.update(kernel.Options{Global: kernel.Rule{Limits: []spi.Spec{lockedSpec(1)}}, Methods: method, Queue: q})
	_, err = k.Disable()
	require.NoError(t, err)
	f.enable(kernel.Options{Global: kernel.Rule{Limits: []spi.Spec{lockedSpec(1)}}}) // no queue: refusals are immediate
	h0.Release()                                                                     // w is granted, charged to the global successor
	require.NoError(t, w.result(t))
	f.refused(f.shout, kernel.ReasonConcurrency) // one global unit, held by w
	w.p.Release()
	f.grant(f.shout).Release()
}
