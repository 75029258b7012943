package kernel

import (
	"errors"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/sluicerpc/sluice/spi"
)

// Config is what a Kernel is built from.
type Config struct {
	// Catalog lists the methods requests name. Required.
	Catalog *Catalog
	// Registry resolves limiter kinds; nil means spi.DefaultRegistry.
	Registry *spi.Registry
	// Clock is read by requests whose route has a rate limit, and to
	// build and reconfigure limiters; nil means spi.NewMonotonicClock().
	Clock spi.Clock
}

// Kernel is one server's admission: the published program and the stable
// state under every program. All methods are safe for concurrent use.
type Kernel struct {
	cat   *Catalog
	reg   *spi.Registry
	clock spi.Clock

	cell Cell[*program]
	// hooks are test interleaving points; nil in production.
	hooks *hooks

	// mu serializes lifecycle writers and guards the registry.
	mu       sync.Mutex
	gen      atomic.Uint64 // last published generation number
	enabled  bool
	sealed   atomic.Bool
	registry map[stateKey]*state
	// lastRate is the rate lineage of each scope bound by the last
	// enabled program: what the next Update or Enable continues.
	lastRate map[Scope]*state
	// concHead is the newest concurrency state of each scope that the
	// registry keeps: what the next program binds at the scope.
	concHead map[Scope]*state
	lineages uint64 // lineage numbers handed out
	// spaces are the partition namespaces that unreclaimed programs
	// bind; lastNS is the last enabled program's.
	spaces   []*namespace
	lastNS   *namespace
	programs []*program // published and not yet swept once drained

	// qmu guards every waiter list and the shared queue accounting.
	qmu         sync.Mutex
	queuedCalls int
	queuedBytes int64
	seq         uint64
	// allWaiters lists every waiter, on whatever state it waits (Seal
	// ends each); armed are the states with a pending retry timer;
	// wakeLater are succession chains to dispatch before qmu is released.
	allWaiters *waiter
	armed      map[*state]struct{}
	wakeLater  []*state

	live      atomic.Int64 // published programs not yet drained
	drainedCh chan struct{}
	drainOnce sync.Once

	doubleReleases atomic.Uint64
}

// New returns a disabled kernel over cfg.Catalog.
func New(cfg Config) (*Kernel, error) {
	if cfg.Catalog == nil {
		return nil, errors.New("kernel: Config.Catalog is required")
	}
	k := &Kernel{
		cat:       cfg.Catalog,
		reg:       cfg.Registry,
		clock:     cfg.Clock,
		registry:  make(map[stateKey]*state),
		concHead:  make(map[Scope]*state),
		drainedCh: make(chan struct{}),
	}
	if k.reg == nil {
		k.reg = spi.DefaultRegistry
	}
	if k.clock == nil {
		k.clock = spi.NewMonotonicClock()
	}
	return k, nil
}

// Catalog returns the kernel's catalog.
func (k *Kernel) Catalog() *Catalog { return k.cat }

// Generation returns the number of the last publication (Enable, Update or
// Disable). It starts at 0 (disabled, nothing published).
func (k *Kernel) Generation() uint64 { return k.gen.Load() }

// Enabled reports whether a program is published.
func (k *Kernel) Enabled() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.enabled
}

// Capture captures the current program into p, with a lease that p owns
// until p.Release. It returns false when admission is disabled: then p is
// untouched, nothing was allocated or counted, and the request proceeds
// without policy admission. Capture is one atomic load when disabled.
//
// p must be idle (new, or released); capturing into a permit that is in use
// panics.
func (k *Kernel) Capture(p *Permit) bool {
	if k.cell.cur.Load() == nil {
		return false
	}
	return k.captureSlow(p)
}

func (k *Kernel) captureSlow(p *Permit) bool {
	l, ok := k.cell.Acquire(uintptr(unsafe.Pointer(p)))
	if !ok {
		return false
	}
	p.capture(l)
	if h := k.hooks; h != nil && h.afterCapture != nil {
		h.afterCapture(p)
	}
	return true
}

func (k *Kernel) checkDrained() {
	if k.sealed.Load() && k.live.Load() == 0 {
		k.drainOnce.Do(func() { close(k.drainedCh) })
	}
}
