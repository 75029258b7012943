package window_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/sluicerpc/sluice/spi"
)

// drawConfig draws valid parameters of one kind, aligned to origin. Windows
// are a few microseconds so that random time steps cross many boundaries.
func drawConfig(t *rapid.T, fixed bool, origin int64, label string) refConfig {
	c := refConfig{fixed: fixed, origin: origin, segments: 1}
	c.limit = rapid.Int64Range(1, 8).Draw(t, label+" permitLimit")
	if fixed {
		c.window = rapid.SampledFrom([]int64{1000, 1500, 2000, 3000, 5000}).Draw(t, label+" window")
		return c
	}
	c.segments = rapid.SampledFrom([]int64{2, 2, 3, 4, 4, 5, 6, 8, 13, 32}).Draw(t, label+" segments")
	c.window = c.segments * rapid.SampledFrom([]int64{500, 600, 1000, 1500}).Draw(t, label+" segment length")
	return c
}

// generation is one limiter of a chain of algorithm replacements, with its
// reference model.
type generation struct {
	lim spi.Limiter
	ref *refModel
}

// machine drives a limiter and its reference model with the same random
// operations, and logs every grant and publication for the no-free-burst
// checkers.
type machine struct {
	now      int64
	gens     []generation // the last one is current; the others are sealed
	epochs   []epochRec
	log      []grantRec
	logGen   []int   // the generation that made log[i]
	atNow    []int   // indices of log entries granted at now and not cancelled
	lastHint []int64 // retry instants seen, for time steps that land on them
}

func (m *machine) cur() generation { return m.gens[len(m.gens)-1] }

func newMachine(cfg refConfig) *machine {
	return &machine{
		gens:   []generation{{lim: cfg.newLimiter(), ref: newRef(cfg)}},
		epochs: []epochRec{{cfg: cfg, start: cfg.origin}},
	}
}

func (m *machine) advance(t *rapid.T) {
	cfg := m.cur().ref.cfg
	var dt int64
	switch rapid.IntRange(0, 5).Draw(t, "step kind") {
	case 0:
		dt = 1
	case 1:
		dt = rapid.Int64Range(1, 2*cfg.window).Draw(t, "dt")
	case 2: // onto a segment boundary, or next to it
		next := cfg.segStart(m.now) + cfg.seg() + rapid.Int64Range(-1, 1).Draw(t, "offset")
		dt = max(next-m.now, 0)
	case 3: // onto a retry instant seen earlier
		if len(m.lastHint) == 0 {
			t.Skip("no hint")
		}
		dt = max(rapid.SampledFrom(m.lastHint).Draw(t, "hint")-m.now, 0)
	case 4:
		dt = rapid.Int64Range(1e4, 1e7).Draw(t, "long dt")
	}
	if dt > 0 {
		m.now += dt
		m.atNow = m.atNow[:0]
		m.lastHint = slices.DeleteFunc(m.lastHint, func(h int64) bool { return h <= m.now })
	}
}

func (m *machine) acquire(t *rapid.T) {
	g := m.cur()
	n := rapid.Int64Range(0, g.ref.cfg.limit+1).Draw(t, "n")
	probe := g.ref.clone()
	want := g.ref.acquire(m.now, n)
	got := g.lim.TryAcquire(at(time.Duration(m.now)), n)
	if got.Granted != want.Granted || got.Hint != want.Hint || !got.RetryAt.Equal(want.RetryAt) {
		t.Fatalf("TryAcquire(t0+%dns, %d) under %v = %s, want %s", m.now, n, g.ref.cfg, show(got), show(want))
	}
	switch {
	case got.Granted && n > 0:
		e := len(m.epochs) - 1
		rec := grantRec{t: m.now, n: n, eMin: e, eMax: e}
		m.log = append(m.log, rec)
		m.logGen = append(m.logGen, len(m.gens)-1)
		m.atNow = append(m.atNow, len(m.log)-1)
		if err := checkInstant(m.epochs, m.log, rec); err != nil {
			t.Fatal(err)
		}
	case got.Hint == spi.HintAt:
		// The hint is exact for the model too: refused 1ns before,
		// granted at it.
		h := int64(got.RetryAt.Sub(t0))
		if h <= m.now {
			t.Fatalf("hint t0+%dns is not after now t0+%dns", h, m.now)
		}
		if before := probe.clone(); h-1 > m.now && before.acquire(h-1, n).Granted {
			t.Fatalf("hint t0+%dns is late: %d units fit 1ns before", h, n)
		}
		if !probe.acquire(h, n).Granted {
			t.Fatalf("hint t0+%dns is early: %d units do not fit", h, n)
		}
		m.lastHint = append(m.lastHint, h)
	}
}

func (m *machine) cancel(t *rapid.T) {
	if len(m.atNow) == 0 {
		t.Skip("nothing granted at now")
	}
	k := rapid.IntRange(0, len(m.atNow)-1).Draw(t, "grant")
	i := m.atNow[k]
	m.atNow = slices.Delete(m.atNow, k, k+1)
	g := m.gens[m.logGen[i]] // the kernel cancels where it acquired
	g.lim.Cancel(at(time.Duration(m.now)), m.log[i].n)
	g.ref.cancel(m.now, m.log[i].n)
	m.log[i].n = 0
}

func (m *machine) reconfigure(t *rapid.T) {
	g := m.cur()
	next := drawConfig(t, g.ref.cfg.fixed, m.now, "new")
	if rapid.Bool().Draw(t, "limit only") {
		next.window, next.segments = g.ref.cfg.window, g.ref.cfg.segments
	}
	if err := g.lim.Reconfigure(at(time.Duration(m.now)), next.params()); err != nil {
		t.Fatalf("Reconfigure(%v): %v", next, err)
	}
	if err := g.ref.reconfigure(m.now, next); err != nil {
		t.Fatal(err)
	}
	m.epochs = append(m.epochs, epochRec{cfg: g.ref.cfg, start: m.now})
}

func (m *machine) reconfigureInvalid(t *rapid.T) {
	g := m.cur()
	p := g.ref.cfg.params()
	switch rapid.IntRange(0, 4).Draw(t, "what is wrong") {
	case 0:
		p["permitLimit"] = rapid.SampledFrom([]int64{0, -1, 1 << 31}).Draw(t, "bad permitLimit")
	case 1:
		p["window"] = rapid.SampledFrom([]int64{0, -1000, 999}).Draw(t, "bad window")
	case 2:
		p["burst"] = 1
	case 3:
		delete(p, rapid.SampledFrom([]string{"permitLimit", "window"}).Draw(t, "missing"))
	case 4:
		if g.ref.cfg.fixed {
			p["segments"] = 2 // unknown for a fixed window
		} else {
			p["segments"] = rapid.SampledFrom([]int64{0, 1, 4097, g.ref.cfg.window + 1}).Draw(t, "bad segments")
		}
	}
	before := g.lim.Snapshot(at(time.Duration(m.now)))
	err := g.lim.Reconfigure(at(time.Duration(m.now)), p)
	var pe *spi.ParamError
	if !errors.As(err, &pe) {
		t.Fatalf("Reconfigure(%v) = %v, want a *spi.ParamError", p, err)
	}
	if after := g.lim.Snapshot(at(time.Duration(m.now))); after != before {
		t.Fatalf("a rejected Reconfigure changed the state: %+v -> %+v", before, after)
	}
}

// replace is the kernel's algorithm replacement: seal the current limiter
// and hand its usage to a new limiter of the other kind.
func (m *machine) replace(t *rapid.T) {
	old := m.cur()
	cfg := drawConfig(t, !old.ref.cfg.fixed, m.now, "replacement")
	usage := old.lim.(spi.Handover).Seal(at(time.Duration(m.now)))
	want := old.ref.seal(m.now)
	if got := canonicalUsage(usage); !slices.EqualFunc(got, want, func(a, b spi.Usage) bool {
		return a.Units == b.Units && a.Until.Equal(b.Until)
	}) {
		t.Fatalf("Seal(t0+%dns) of %v = %v, want %v", m.now, old.ref.cfg, got, want)
	}
	if !slices.IsSortedFunc(usage, func(a, b spi.Usage) int { return a.Until.Compare(b.Until) }) {
		t.Fatalf("Seal returned usage out of order: %v", usage)
	}
	next := generation{lim: cfg.newLimiter(), ref: newRef(cfg)}
	next.lim.(spi.Inheritor).Inherit(at(time.Duration(m.now)), usage)
	next.ref.inherit(m.now, want)
	m.gens = append(m.gens, next)
	m.epochs = append(m.epochs, epochRec{cfg: cfg, start: m.now})
}

func (m *machine) check(t *rapid.T) {
	for i, g := range m.gens {
		got, want := g.lim.Snapshot(at(time.Duration(m.now))), g.ref.snapshot(m.now)
		if got != want {
			t.Fatalf("generation %d (%v): Snapshot(t0+%dns) = %+v, want %+v", i, g.ref.cfg, m.now, got, want)
		}
	}
	if len(m.gens) > 1 { // a sealed limiter refuses everything
		if d := m.gens[0].lim.TryAcquire(at(time.Duration(m.now)), 1); d != spi.RefuseNever() {
			t.Fatalf("sealed limiter: TryAcquire = %s", show(d))
		}
	}
}

func runMachine(t *rapid.T, fixed bool) {
	m := newMachine(drawConfig(t, fixed, rapid.Int64Range(0, 1e6).Draw(t, "origin"), "initial"))
	m.now = m.epochs[0].start
	t.Repeat(map[string]func(*rapid.T){
		"advance":             m.advance,
		"acquire":             m.acquire,
		"acquire again":       m.acquire,
		"cancel":              m.cancel,
		"reconfigure":         m.reconfigure,
		"reconfigure invalid": m.reconfigureInvalid,
		"replace algorithm":   m.replace,
		"":                    m.check,
	})
	if err := checkBlocks(m.epochs, m.log, m.now); err != nil {
		t.Fatal(err)
	}
}

// TestFixedStateMachine and TestSlidingStateMachine drive a limiter (and,
// after algorithm replacements, its successors of the other kind) with
// random sequences of time steps, acquisitions, cancels, reconfigurations
// and replacements. Every decision, Snapshot and Seal must equal the
// reference model's (refModel, a brute-force statement of the rules),
// every grant must pass the instant no-free-burst check, and the whole log
// the block check (burst_test.go).
func TestFixedStateMachine(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) { runMachine(t, true) })
}

func TestSlidingStateMachine(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) { runMachine(t, false) })
}

// TestCheckersCatchFreeBursts makes sure the no-free-burst checkers are not
// vacuous: a log that a resetting limiter would produce fails them.
func TestCheckersCatchFreeBursts(t *testing.T) {
	fixed := refConfig{fixed: true, limit: 10, window: 1e9, segments: 1}
	tenTo10s := refConfig{fixed: true, limit: 10, window: 10e9, segments: 1, origin: 400e6}
	raised := fixed
	raised.limit = 20
	sliding := refConfig{limit: 10, window: 1e9, segments: 4}

	for _, tt := range []struct {
		name   string
		epochs []epochRec
		log    []grantRec
		blocks bool // whether the block check sees it too
	}{
		{"window change that resets the count",
			[]epochRec{{fixed, 0}, {tenTo10s, 400e6}},
			[]grantRec{{400e6, 7, 0, 0}, {500e6, 4, 1, 1}}, true},
		{"limit change that opens a new window",
			[]epochRec{{fixed, 0}, {raised, 400e6}},
			[]grantRec{{400e6, 7, 0, 0}, {500e6, 14, 1, 1}}, true},
		{"sliding window that forgets a segment",
			[]epochRec{{sliding, 0}},
			[]grantRec{{0, 5, 0, 0}, {300e6, 6, 0, 0}}, true},
		{"replacement that forgets the usage at the publication",
			[]epochRec{{sliding, 0}, {refConfig{fixed: true, limit: 10, window: 1e9, segments: 1, origin: 500e6}, 500e6}},
			[]grantRec{{500e6, 8, 0, 0}, {600e6, 3, 1, 1}}, true},
		// The block check only sees carried usage granted at the
		// publication instant; the instant check sees all of it.
		{"replacement that forgets earlier usage",
			[]epochRec{{sliding, 0}, {refConfig{fixed: true, limit: 10, window: 1e9, segments: 1, origin: 500e6}, 500e6}},
			[]grantRec{{300e6, 8, 0, 0}, {600e6, 3, 1, 1}}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			last := tt.log[len(tt.log)-1]
			if checkInstant(tt.epochs, tt.log, last) == nil {
				t.Error("checkInstant passed")
			}
			if err := checkBlocks(tt.epochs, tt.log, last.t); (err != nil) != tt.blocks {
				t.Errorf("checkBlocks: %v", err)
			}
		})
	}
}
