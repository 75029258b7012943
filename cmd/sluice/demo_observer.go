package main

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicerpc/sluice/kernel"
	"github.com/sluicerpc/sluice/limiters/concurrency"
	"github.com/sluicerpc/sluice/spi"
)

// observer checks, from outside the kernel, that no grant ever left the
// number of holders of a scope above the bound of a program that could have
// granted it.
//
// The updater (the only publisher) calls publishing before every Enable,
// Update or Disable: it appends the candidate's concurrency limits to the
// epoch log and bumps the epoch, so the epoch of a publication equals the
// kernel generation it produces. A worker reads the epoch (e0) before it
// sends its request, so before the server captures a program for it; the
// handler, which runs once the server's admission granted the call, calls
// granted with e0 and the generation that admitted the call
// (server.CallInfoFromContext), which increments the holder count of every
// scope the granting program binds and then reads the epoch again (e1). The grant is an over-admission if a holder count it produced is
// above the largest limit that scope had in epochs e0-1 through e1: the
// program current at Capture is that of e0 or, if the publication of e0 had
// not happened yet, e0-1, and a queued grant is checked against whatever
// limit is committed when it is taken, which is at most e1's. Disabled
// epochs, and epochs whose program does not bind the scope, contribute no
// limit. Holders that stay above a shrunk bound are fine; only a grant that
// produces a count above every bound in its window is counted.
//
// Holder counts are incremented in the handler, after the server's
// admission granted the call, and decremented before the handler returns,
// so before the server releases the permit: at every instant they are at
// most what the kernel holds; if the kernel respects its limits the observer never counts an
// over-admission. Permits captured while disabled are never counted.
//
// The observer also records the time of every grant by a program with a
// Global token bucket (publishingRate), and the times around each
// publication, for the rate check of demo_rate.go.
type observer struct {
	cat    *kernel.Catalog
	scopes []*scopeCount // global, then services by id, then methods by id
	// now is the observer's clock (time.Now; tests replace it before use).
	now func() time.Time

	mu    sync.RWMutex
	log   []epochEntry // log[e] is epoch e; log[0] is the initial disabled state
	epoch atomic.Uint64

	over     atomic.Int64
	vmu      sync.Mutex
	examples []string // the first few over-admissions, for the report

	rmu        sync.Mutex
	rateGrants []rateGrant // grants by programs with a Global token bucket
}

// maxExamples bounds the over-admissions described in the report.
const maxExamples = 5

// scopeCount is the demo's own holder count of one scope.
type scopeCount struct {
	idx     int    // index in observer.scopes
	name    string // "global", "service:shop", "method:shop/Checkout"
	holders atomic.Int64
	peak    atomic.Int64
}

// epochEntry is what the observer knows about one publication: the
// concurrency limit of each scope its program binds (by index into
// observer.scopes) and its Global token bucket, or nothing for a Disable;
// and when the publication was made.
type epochEntry struct {
	enabled bool
	limits  map[int]int64
	rate    *bucket // the Global token bucket; nil when there is none

	// begun is read before the kernel call, done after it returned (zero
	// until then): the kernel's publication instant is between them.
	begun, done time.Time
}

// rateGrant is one grant by a program with a Global token bucket, stamped
// after Admit returned (so at or after the kernel's grant).
type rateGrant struct {
	gen uint64
	at  time.Time
}

// holding is one counted grant, returned to released.
type holding struct {
	scopes [3]*scopeCount
	n      int
}

func newObserver(cat *kernel.Catalog) *observer {
	o := &observer{cat: cat, now: time.Now, log: []epochEntry{{}}}
	add := func(name string) { o.scopes = append(o.scopes, &scopeCount{idx: len(o.scopes), name: name}) }
	add("global")
	for s := 0; s < cat.Services(); s++ {
		add("service:" + cat.ServiceName(kernel.ServiceID(s)))
	}
	for m := 0; m < cat.Methods(); m++ {
		add("method:" + cat.FullName(kernel.MethodID(m)))
	}
	return o
}

func (o *observer) serviceIndex(s kernel.ServiceID) int { return 1 + int(s) }
func (o *observer) methodIndex(m kernel.MethodID) int   { return 1 + o.cat.Services() + int(m) }

// publishing records the configuration about to be published (nil for
// Disable) and returns its epoch. Call it before Enable, Update or Disable,
// and published after. opts must not carry a Global rate limit: use
// publishingRate for that.
func (o *observer) publishing(opts *kernel.Options) uint64 {
	return o.appendEpoch(o.entryOf(opts, nil))
}

// publishingRate is publishing for a candidate whose Global rule carries
// the token bucket b (b.spec()).
func (o *observer) publishingRate(opts *kernel.Options, b bucket) uint64 {
	return o.appendEpoch(o.entryOf(opts, &b))
}

func (o *observer) appendEpoch(e epochEntry) uint64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	e.begun = o.now()
	o.log = append(o.log, e)
	n := uint64(len(o.log) - 1)
	o.epoch.Store(n)
	return n
}

// published records that the kernel call publishing epoch e returned.
func (o *observer) published(e uint64) {
	now := o.now()
	o.mu.Lock()
	defer o.mu.Unlock()
	if e < uint64(len(o.log)) {
		o.log[e].done = now
	}
}

// entryOf extracts the concurrency limit of each scope of opts, and checks
// that the Global rule carries the token bucket rate, and no other limit,
// besides its concurrency limit (a demo bug otherwise: the rate check would
// be told the wrong bucket).
func (o *observer) entryOf(opts *kernel.Options, rate *bucket) epochEntry {
	if opts == nil {
		if rate != nil {
			panic("observer: a token bucket for a Disable")
		}
		return epochEntry{}
	}
	e := epochEntry{enabled: true, limits: make(map[int]int64), rate: rate}
	if l, ok := concurrencyLimit(opts.Global); ok {
		e.limits[0] = l
	}
	var others []spi.Spec
	for _, s := range opts.Global.Limits {
		if s.Kind != concurrency.KindName {
			others = append(others, s)
		}
	}
	switch {
	case rate == nil && len(others) > 0:
		panic(fmt.Sprintf("observer: Global limit %s published without its rate (use publishingRate)", others[0].Kind))
	case rate != nil && (len(others) != 1 || others[0].Kind != rate.spec().Kind || !others[0].Params.Equal(rate.spec().Params)):
		panic(fmt.Sprintf("observer: the Global rule does not carry exactly the bucket %s", rate))
	}
	for name, r := range opts.Services {
		if sid, ok := o.cat.Service(name); ok {
			if l, ok := concurrencyLimit(r); ok {
				e.limits[o.serviceIndex(sid)] = l
			}
		}
	}
	for name, r := range opts.Methods {
		if mid, ok := o.cat.Lookup(name); ok {
			if l, ok := concurrencyLimit(r); ok {
				e.limits[o.methodIndex(mid)] = l
			}
		}
	}
	return e
}

func concurrencyLimit(r kernel.Rule) (int64, bool) {
	for _, s := range r.Limits {
		if s.Kind == concurrency.KindName {
			return s.Params.Int(concurrency.ParamLimit)
		}
	}
	return 0, false
}

// currentEpoch is e0, read by a worker before Capture.
func (o *observer) currentEpoch() uint64 { return o.epoch.Load() }

// granted counts a permit that program gen granted for method m, after its
// worker read e0 before Capture, and checks every scope it holds.
func (o *observer) granted(e0, gen uint64, m kernel.MethodID) *holding {
	o.mu.RLock()
	var entry epochEntry
	known := gen < uint64(len(o.log))
	if known {
		entry = o.log[gen]
	}
	o.mu.RUnlock()

	h := &holding{}
	var counts [3]int64
	if known && entry.enabled {
		for _, idx := range [3]int{0, o.serviceIndex(o.cat.ServiceOf(m)), o.methodIndex(m)} {
			if _, binds := entry.limits[idx]; binds {
				sc := o.scopes[idx]
				counts[h.n] = sc.holders.Add(1)
				h.scopes[h.n] = sc
				h.n++
			}
		}
	}
	e1 := o.epoch.Load()
	if known && entry.rate != nil {
		// Stamped after Admit returned: at or after the kernel's grant.
		g := rateGrant{gen: gen, at: o.now()}
		o.rmu.Lock()
		o.rateGrants = append(o.rateGrants, g)
		o.rmu.Unlock()
	}

	if !known || !entry.enabled {
		o.violation(fmt.Sprintf("grant of %s by generation %d, which was never published as an enabled program (epochs %d..%d)",
			o.cat.FullName(m), gen, lowEpoch(e0), e1))
		return h
	}
	for i := 0; i < h.n; i++ {
		sc, n := h.scopes[i], counts[i]
		raisePeak(&sc.peak, n)
		if bound, ok := o.bound(sc.idx, e0, e1); !ok || n > bound {
			o.violation(fmt.Sprintf("grant of %s by generation %d left %s at %d holders, above %s (epochs %d..%d)",
				o.cat.FullName(m), gen, sc.name, n, boundString(bound, ok), lowEpoch(e0), e1))
		}
	}
	return h
}

// released uncounts a grant. Call it before the permit's Release.
func (o *observer) released(h *holding) {
	for i := 0; i < h.n; i++ {
		h.scopes[i].holders.Add(-1)
	}
}

func lowEpoch(e0 uint64) uint64 {
	if e0 == 0 {
		return 0
	}
	return e0 - 1
}

// bound is the largest limit scope idx had in an enabled epoch of
// [e0-1, e1]; ok is false when no epoch of the window binds it.
func (o *observer) bound(idx int, e0, e1 uint64) (bound int64, ok bool) {
	o.mu.RLock()
	defer o.mu.RUnlock()
	for e := lowEpoch(e0); e <= e1 && e < uint64(len(o.log)); e++ {
		ent := o.log[e]
		if !ent.enabled {
			continue
		}
		if l, binds := ent.limits[idx]; binds && (!ok || l > bound) {
			bound, ok = l, true
		}
	}
	return bound, ok
}

func boundString(bound int64, ok bool) string {
	if !ok {
		return "no bound in force"
	}
	return fmt.Sprintf("bound %d", bound)
}

func (o *observer) violation(msg string) {
	o.over.Add(1)
	o.vmu.Lock()
	if len(o.examples) < maxExamples {
		o.examples = append(o.examples, msg)
	}
	o.vmu.Unlock()
}

func raisePeak(peak *atomic.Int64, n int64) {
	for {
		p := peak.Load()
		if n <= p || peak.CompareAndSwap(p, n) {
			return
		}
	}
}

// rateGrantCount returns the number of grants by programs with a Global
// token bucket recorded so far.
func (o *observer) rateGrantCount() int {
	o.rmu.Lock()
	defer o.rmu.Unlock()
	return len(o.rateGrants)
}

// overAdmissions returns the number of over-admissions counted.
func (o *observer) overAdmissions() int64 { return o.over.Load() }

// overExamples returns descriptions of the first over-admissions.
func (o *observer) overExamples() []string {
	o.vmu.Lock()
	defer o.vmu.Unlock()
	return append([]string(nil), o.examples...)
}

// holders returns the demo's holder count of the named scope.
func (o *observer) holders(name string) int64 {
	if sc := o.scope(name); sc != nil {
		return sc.holders.Load()
	}
	return 0
}

// peak returns the highest holder count a grant produced in the named scope.
func (o *observer) peak(name string) int64 {
	if sc := o.scope(name); sc != nil {
		return sc.peak.Load()
	}
	return 0
}

func (o *observer) scope(name string) *scopeCount {
	for _, sc := range o.scopes {
		if sc.name == name {
			return sc
		}
	}
	return nil
}

// nonZeroHolders lists the scopes whose holder count is not zero.
func (o *observer) nonZeroHolders() []string {
	var out []string
	for _, sc := range o.scopes {
		if n := sc.holders.Load(); n != 0 {
			out = append(out, fmt.Sprintf("%s=%d", sc.name, n))
		}
	}
	return out
}
