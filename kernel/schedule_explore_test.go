package kernel_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/sluicerpc/sluice/kernel"
	"github.com/sluicerpc/sluice/limiters/concurrency"
	"github.com/sluicerpc/sluice/spi"
)

// Systematic exploration of the kernel's grant / release / publish / kind
// succession / Seal protocol on small configurations (issue 24 section
// 3): a few actors (goroutines running a short script each) take turns at
// scheduling points, one at a time, and every order of their turns is
// run, each from a fresh kernel. The points are where the protocol
// publishes or reads shared state: after Capture, before and after every
// TryAcquire a request makes on a limiter, after a Release, after a
// publication's plan and before its commit, and inside a concurrency
// handover between the link to the successor and the read of the old
// state's occupancy. Between two points an actor runs alone, so the
// exploration is deterministic, and an execution that does not replay
// the same choices fails. After every turn the holder ledger (the grants
// returned and not yet released, with any holder the scenario starts
// with) must be within the limit; after every execution every unit must
// be back and the kernel drained.
//
// Not explored: waits in the queue (a queued request blocks outside a
// scheduling point; the storms and porcupine cover the queue) and points
// inside the kernel's locks (a turn taken there would stop actors that
// need the lock).

// stepper schedules the actors of one execution.
type stepper struct {
	mu     sync.Mutex
	actors map[int64]int // goroutine id -> actor
	// publishers are the actors whose limiter calls are not points: a
	// publication calls limiters inside the kernel's locks.
	publishers map[int]bool
	turn       []chan struct{}
	paused     chan int // an actor reached a point (its id) or ended (-1-id)
}

// point is a scheduling point: the calling actor waits for its turn; any
// other goroutine (the test's own) passes.
func (s *stepper) point() { s.pointIf(true) }

// limiterPoint is a scheduling point for request actors only.
func (s *stepper) limiterPoint() { s.pointIf(false) }

func (s *stepper) pointIf(publishers bool) {
	if s == nil {
		return
	}
	s.mu.Lock()
	a, ok := s.actors[goid()]
	ok = ok && (publishers || !s.publishers[a])
	s.mu.Unlock()
	if !ok {
		return
	}
	s.paused <- a
	<-s.turn[a]
}

func goid() int64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	id, _ := strconv.ParseInt(string(b[:bytes.IndexByte(b, ' ')]), 10, 64)
	return id
}

// current is the stepper of the execution under way (the limiters and the
// hooks reach it here); executions run one after another.
var current struct {
	sync.Mutex
	s *stepper
}

func currentStepper() *stepper {
	current.Lock()
	defer current.Unlock()
	return current.s
}

// stepKind wraps a concurrency kind: its limiters' TryAcquire is a
// scheduling point before and after the call.
type stepKind struct{ inner spi.LimiterKind }

func (k stepKind) Name() string                { return "step/" + k.inner.Name() }
func (k stepKind) Class() spi.Class            { return k.inner.Class() }
func (k stepKind) Validate(p spi.Params) error { return k.inner.Validate(p) }
func (k stepKind) New(p spi.Params, now time.Time) (spi.Limiter, error) {
	l, err := k.inner.New(p, now)
	if err != nil {
		return nil, err
	}
	return stepLimiter{l}, nil
}

type stepLimiter struct{ spi.Limiter }

func (l stepLimiter) TryAcquire(now time.Time, n int64) spi.Decision {
	currentStepper().limiterPoint()
	d := l.Limiter.TryAcquire(now, n)
	currentStepper().limiterPoint()
	return d
}

func stepSpec(kind string, limit int64) spi.Spec {
	return spi.Spec{Kind: "step/" + kind, Params: spi.Params{concurrency.ParamLimit: limit}}
}

// scenario is a small configuration and the scripts of its actors.
type scenario struct {
	name  string
	limit int
	// setup enables the kernel and returns the holders it starts with.
	setup  func(k *kernel.Kernel) []*kernel.Permit
	actors []func(k *kernel.Kernel, l *holderLedger, start []*kernel.Permit) error
	// end runs after the actors, from the test's goroutine.
	end func(k *kernel.Kernel) error
	// publishers marks the actors that publish (their limiter calls are
	// not points).
	publishers []bool
	// keepsStart: no actor releases the holders the scenario starts
	// with; the execution releases them after the actors.
	keepsStart bool
}

// holderLedger counts the grants held: counted once Admit returned them,
// uncounted before Release.
type holderLedger struct {
	mu   sync.Mutex
	held int
}

func (l *holderLedger) add(n int) {
	l.mu.Lock()
	l.held += n
	l.mu.Unlock()
}

func (l *holderLedger) get() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.held
}

// request is an actor's script: capture, admit, release when granted.
func request(k *kernel.Kernel, l *holderLedger, _ []*kernel.Permit) error {
	var p kernel.Permit
	if !k.Capture(&p) {
		return nil
	}
	if err := p.Admit(context.Background(), kernel.Request{Method: exploreSay}); err != nil {
		p.Release()
		return nil
	}
	l.add(1)
	currentStepper().point() // a turn while holding
	l.add(-1)
	p.Release()
	return nil
}

// releaseStart releases the holders the scenario started with.
func releaseStart(_ *kernel.Kernel, l *holderLedger, start []*kernel.Permit) error {
	for _, p := range start {
		l.add(-1)
		p.Release()
	}
	return nil
}

var exploreSay kernel.MethodID

// decision is one choice of an execution: the runnable actors in the
// order they are tried (the actor that just ran first) and the one
// chosen.
type decision struct {
	order  []int
	chosen int  // index in order
	ran    bool // order[0] is the actor that just ran: another is a preemption
}

// preemptions counts the decisions of trace that stopped a runnable actor.
func preemptions(trace []decision) int {
	n := 0
	for _, d := range trace {
		if d.ran && d.chosen > 0 {
			n++
		}
	}
	return n
}

// explore runs every order of sc's turns that stops a runnable actor at
// most bound times (bound < 0: every order; see explorePreemptions) and
// returns the number of executions.
func explore(t *testing.T, sc scenario, bound int) int {
	t.Helper()
	var prefix []int // actors chosen at the first decisions
	runs := 0
	for {
		runs++
		trace, err := runOnce(sc, prefix)
		if err != nil {
			t.Fatalf("%s: execution %d (turns %v): %v", sc.name, runs, chosenActors(trace), err)
		}
		// Backtrack to the last decision with an untried alternative.
		i := len(trace) - 1
		for ; i >= 0; i-- {
			d := trace[i]
			if d.chosen+1 >= len(d.order) {
				continue
			}
			if bound >= 0 && d.ran && preemptions(trace[:i])+1 > bound {
				continue
			}
			break
		}
		if i < 0 {
			return runs
		}
		prefix = append(chosenActors(trace[:i]), trace[i].order[trace[i].chosen+1])
	}
}

func chosenActors(trace []decision) []int {
	out := make([]int, len(trace))
	for i, d := range trace {
		out[i] = d.order[d.chosen]
	}
	return out
}

// runOnce runs one execution, following prefix, then the actor that ran
// last while it can, then the lowest.
func runOnce(sc scenario, prefix []int) (trace []decision, err error) {
	reg := &spi.Registry{}
	reg.MustRegister(stepKind{concurrency.Kind{}})
	reg.MustRegister(stepKind{lockedConcKind{}})
	var b kernel.CatalogBuilder
	exploreSay = b.MustAdd("echo", "Say")
	k, err := kernel.New(kernel.Config{Catalog: b.Build(), Registry: reg})
	if err != nil {
		return nil, err
	}
	start := sc.setup(k)
	ledger := &holderLedger{held: len(start)}
	n := len(sc.actors)
	s := &stepper{actors: map[int64]int{}, publishers: map[int]bool{}, turn: make([]chan struct{}, n), paused: make(chan int)}
	for i, p := range sc.publishers {
		s.publishers[i] = p
	}
	for i := range s.turn {
		s.turn[i] = make(chan struct{})
	}
	current.Lock()
	current.s = s
	current.Unlock()
	defer func() {
		current.Lock()
		current.s = nil
		current.Unlock()
	}()
	k.SetHooks(&kernel.Hooks{
		AfterCapture: func(*kernel.Permit) { s.point() },
		AfterPrepare: s.point,
		BeforeCommit: s.point,
		AfterRelease: func(*kernel.Permit) { s.point() },
	})
	kernel.SetAfterLinkHook(s.point)
	defer kernel.SetAfterLinkHook(nil)

	errs := make([]error, n)
	for i, script := range sc.actors {
		go func() {
			s.mu.Lock()
			s.actors[goid()] = i
			s.mu.Unlock()
			s.paused <- i // wait for the first turn
			<-s.turn[i]
			errs[i] = script(k, ledger, start)
			s.paused <- -1 - i
		}()
	}
	for range n {
		<-s.paused
	}
	done := make([]bool, n)
	last := -1
	for len(trace) < 10_000 {
		var order []int
		if last >= 0 && !done[last] {
			order = append(order, last)
		}
		for a := range n {
			if !done[a] && a != last {
				order = append(order, a)
			}
		}
		if len(order) == 0 {
			break
		}
		d := decision{order: order, ran: last >= 0 && !done[last]}
		if i := len(trace); i < len(prefix) {
			d.chosen = slices.Index(order, prefix[i])
			if d.chosen < 0 {
				return trace, fmt.Errorf("the replay diverged at turn %d: actor %d cannot run (runnable %v): the execution is not deterministic", i, prefix[i], order)
			}
		}
		trace = append(trace, d)
		a := order[d.chosen]
		s.turn[a] <- struct{}{}
		select {
		case r := <-s.paused:
			if r < 0 {
				done[-1-r] = true
			}
		case <-time.After(20 * time.Second):
			return trace, fmt.Errorf("actor %d neither reached a scheduling point nor ended within 20 s: blocked outside one (a lock another actor holds at its point?)", a)
		}
		last = a
		if h := ledger.get(); h > sc.limit {
			return trace, fmt.Errorf("%d holders under a limit of %d", h, sc.limit)
		}
	}
	for i, err := range errs {
		if err != nil {
			return trace, fmt.Errorf("actor %d: %w", i, err)
		}
	}
	k.SetHooks(nil)
	if sc.keepsStart {
		for _, p := range start {
			p.Release()
		}
	}
	if sc.end != nil {
		if err := sc.end(k); err != nil {
			return trace, err
		}
	}
	if !k.Stats().Sealed {
		if _, err := k.Disable(); err != nil {
			return trace, err
		}
	}
	k.Seal()
	select {
	case <-k.Drained():
	default:
		return trace, fmt.Errorf("not drained after every permit was released: %+v", k.Stats())
	}
	if st := k.Stats(); st.DoubleReleases != 0 || st.QueuedCalls != 0 {
		return trace, fmt.Errorf("stats after the execution: %+v", st)
	}
	return trace, nil
}

// explorePreemptions bounds the exploration: the orders that stop a
// runnable actor at most this many times (every order with fewer
// switches is run; most concurrency bugs need one or two, the CHESS
// result). make test: 3 (about 10,000 executions, 6 s with -race);
// $SLUICE_EXPLORE_PREEMPTIONS=-1 runs every order (about 1.4 million
// executions, 9 minutes without -race).
func explorePreemptions(t *testing.T) int {
	t.Helper()
	v := os.Getenv("SLUICE_EXPLORE_PREEMPTIONS")
	if v == "" {
		return 3
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		t.Fatalf("SLUICE_EXPLORE_PREEMPTIONS: %v", err)
	}
	return n
}

func globalOpts(spec spi.Spec) kernel.Options {
	return kernel.Options{Global: kernel.Rule{Limits: []spi.Spec{spec}}}
}

// holding enables opts and takes n grants.
func holding(opts kernel.Options, n int) func(k *kernel.Kernel) []*kernel.Permit {
	return func(k *kernel.Kernel) []*kernel.Permit {
		if _, err := k.Enable(opts); err != nil {
			panic(err)
		}
		var out []*kernel.Permit
		for range n {
			p := new(kernel.Permit)
			if !k.Capture(p) || p.Admit(context.Background(), kernel.Request{Method: exploreSay}) != nil {
				panic("the scenario's first holders were not granted")
			}
			out = append(out, p)
		}
		return out
	}
}

// publish is an actor that publishes opts.
func publish(opts kernel.Options) func(k *kernel.Kernel, _ *holderLedger, _ []*kernel.Permit) error {
	return func(k *kernel.Kernel, _ *holderLedger, _ []*kernel.Permit) error {
		_, err := k.Update(k.Generation(), opts)
		return err
	}
}

// seal is an actor that seals the kernel.
func seal(k *kernel.Kernel, _ *holderLedger, _ []*kernel.Permit) error {
	k.Seal()
	return nil
}

// inUseZero checks that every scope's units are back.
func inUseZero(k *kernel.Kernel) error {
	for _, sc := range k.Stats().Scopes {
		if sc.InUse != 0 {
			return fmt.Errorf("%s holds %d units after every release", sc.Name, sc.InUse)
		}
	}
	return nil
}

func TestEveryScheduleKeepsTheLimit(t *testing.T) {
	builtin := func(l int64) kernel.Options { return globalOpts(stepSpec("concurrency", l)) }
	third := func(l int64) kernel.Options { return globalOpts(stepSpec("example.com/locked", l)) }
	for _, sc := range []scenario{
		{
			// Issue 24 section 1's interleaving among all others: one
			// holder, a kind replacement, a request and the holder's
			// release, limit 1.
			name: "kind replacement, limit 1, one holder", limit: 1,
			setup:      holding(builtin(1), 1),
			actors:     []func(*kernel.Kernel, *holderLedger, []*kernel.Permit) error{publish(third(1)), request, releaseStart},
			publishers: []bool{true},
			end:        inUseZero,
		},
		{
			name: "kind replacement back, limit 2, two requests", limit: 2,
			setup:      holding(third(2), 1),
			actors:     []func(*kernel.Kernel, *holderLedger, []*kernel.Permit) error{publish(builtin(2)), request, request},
			publishers: []bool{true},
			end:        inUseZero, keepsStart: true,
		},
		{
			name: "limit shrink 3 -> 1 and a kind replacement, two requests", limit: 3,
			setup:      holding(builtin(3), 1),
			actors:     []func(*kernel.Kernel, *holderLedger, []*kernel.Permit) error{publish(third(1)), request, request},
			publishers: []bool{true},
			end:        inUseZero, keepsStart: true,
		},
		{
			// Seal takes the lock a publication holds at its points, so
			// it is explored with requests and releases only.
			name: "Seal, a request and a holder's release, limit 1", limit: 1,
			setup:  holding(builtin(1), 1),
			actors: []func(*kernel.Kernel, *holderLedger, []*kernel.Permit) error{seal, request, releaseStart},
			end:    inUseZero,
		},
		{
			name: "two holders released across a kind replacement, limit 2", limit: 2,
			setup:      holding(builtin(2), 2),
			actors:     []func(*kernel.Kernel, *holderLedger, []*kernel.Permit) error{publish(third(2)), request, releaseStart},
			publishers: []bool{true},
			end:        inUseZero,
		},
	} {
		t.Run(sc.name, func(t *testing.T) {
			start := time.Now()
			bound := explorePreemptions(t)
			runs := explore(t, sc, bound)
			t.Logf("%d executions (preemption bound %d), every one within the limit, in %v", runs, bound, time.Since(start).Round(time.Millisecond))
		})
	}
}
