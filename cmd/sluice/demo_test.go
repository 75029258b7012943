package main

import (
	"bytes"
	"context"
	"encoding/xml"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sluicerpc/sluice/kernel"
	"github.com/sluicerpc/sluice/plugin/plugintest"
	"github.com/sluicerpc/sluice/server/servertest"
)

// The demo starts workers, a sampler and queue timers, and "sluice
// conformance" a plugin process: none may outlive them. grpc and go-plugin
// stop a few goroutines of a closed plugin connection asynchronously;
// goleak retries before it reports, and these are the known ones.
func TestMain(m *testing.M) {
	code := m.Run()
	if binaries.dir != "" {
		_ = os.RemoveAll(binaries.dir)
	}
	if code == 0 {
		if err := goleak.Find(plugintest.IgnoreLeaks()...); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

const cleanLine = "invariants: over_admissions=0 counters_zero=true rate_over=0 unexpected_errors=0"

func shortDemoOptions() demoOptions {
	o := defaultDemoOptions()
	o.Workers = 8
	o.Step = 40 * time.Millisecond
	o.RateStep = 160 * time.Millisecond
	o.SVG = ""
	return o
}

// rateRow matches the rows of the rate phase.
// A window that admitted nothing has no bar: its row ends after the
// bucket's rate (the timeline trims trailing spaces).
var rateRow = regexp.MustCompile(`(?m)^ +\d+\.\d{3}s +\d+ +· +8 .* admitted +\d+/s +bucket +(\d+)/s( |$)`)

func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}

// onPipeNetwork puts "sluice serve", "sluice call" and the demo on an
// in-memory network until the test ends; the test runs in a synctest
// bubble, where the scenario's steps, holds, queue delays, rate windows and
// timeouts then run on the bubble's clock: a loaded machine slows the run
// down but cannot change what it sees.
func onPipeNetwork(t *testing.T) {
	n := servertest.NewNetwork()
	prevListen, prevDialer, prevAdminListen, prevAdminDial := listen, dialer, adminListen, adminDial
	listen = func(addr string) (net.Listener, error) { return n.Listen(addr) }
	dialer = n.Dial
	adminListen = func(string) (net.Listener, error) { return n.Listen("") }
	adminDial = n.Dial
	t.Cleanup(func() {
		listen, dialer, adminListen, adminDial = prevListen, prevDialer, prevAdminListen, prevAdminDial
	})
}

func TestDemoShortRunKeepsInvariants(t *testing.T) {
	synctest.Test(t, testDemoShortRunKeepsInvariants)
}

func testDemoShortRunKeepsInvariants(t *testing.T) {
	onPipeNetwork(t)
	var out bytes.Buffer
	opts := shortDemoOptions()
	opts.SVG = filepath.Join(t.TempDir(), "demo.svg")
	res, err := runDemo(context.Background(), &out, opts)
	require.NoError(t, err)
	text := out.String()
	assert.True(t, res.OK(), "result %+v\n%s", res, text)
	assert.Zero(t, res.OverAdmissions)
	assert.True(t, res.CountersZero, "not zero: %v", res.CounterProblems)
	assert.Equal(t, cleanLine, lastLine(text))
	assert.Equal(t, 1, strings.Count(text, "invariants:"), "exactly one invariants line")
	for _, step := range []string{
		"1 start (disabled)", "2 enable global=4", "3 grow global=8", "4 shrink global=2",
		"5 shrink queue calls=1", "6a add rule Checkout=1", "6b remove rule Checkout",
		"7 disable", "8 re-enable global=2", "8b old holders release",
		"9a rate 200/s burst=20", "9b lower 50/s burst=5", "9c raise 300/s burst=30",
		"10 stop, seal, drain",
	} {
		assert.Contains(t, text, step)
	}
	assert.NotContains(t, text, "precondition not reached")

	// The rate phase: 4 rows per bucket, in order, and a clean rate check
	// over grants that did happen under the bucket.
	var buckets []string
	for _, m := range rateRow.FindAllStringSubmatch(text, -1) {
		buckets = append(buckets, m[1])
	}
	assert.Equal(t, []string{"200", "200", "200", "200", "50", "50", "50", "50", "300", "300", "300", "300"}, buckets, text)
	assert.Less(t, strings.Index(text, "9c raise"), strings.Index(text, "10 stop, seal, drain"))
	assert.Zero(t, res.RateOver, res.RateDetail)
	assert.Positive(t, res.RateGrants)
	assert.Contains(t, text, "rate check: ")
	assert.Contains(t, text, "closest approach")

	// Every change went through the admin API, one generation each, in
	// order; the subtle ones show their dry run first.
	assert.Equal(t, publishingSteps, updateSteps(res.Updates))
	for i, u := range res.Updates {
		assert.Equal(t, uint64(i+1), u.Generation, "update %d (%s)", i, u.Step)
	}
	assert.Regexp(t, `admin API on http://pipe-\d+ \(random token\)`, text)
	assert.Equal(t, 6, strings.Count(text, "dry run against generation"), text)
	shrinkPlan := regexp.MustCompile(`(?m)^ +dry run against generation 2 \(update\):\n +~ global/concurrency \(reconfigure\): limit 8 -> 2, in use [3-8], `).FindStringIndex(text)
	shrinkRow := regexp.MustCompile(`(?m)^ +[0-9.]+s +3 +4 shrink global=2 `).FindStringIndex(text)
	if assert.NotNil(t, shrinkPlan, text) && assert.NotNil(t, shrinkRow, text) {
		assert.Less(t, shrinkPlan[0], shrinkRow[0], "the plan is shown before the step's row")
	}
	assert.Regexp(t, `(?m)^ +- method:shop/Checkout/concurrency \(retire\): limit 1,`, text)

	// The chart: one path per series, a command per sample, a marker per
	// update, the disabled intervals shaded.
	assert.Contains(t, text, fmt.Sprintf("chart: %s (%d samples, 11 updates marked)", opts.SVG, res.ChartSamples))
	// The run lasts 10 steps and 3 rate steps at least: a sample every
	// chartEvery over it, and one at the start (the clock is synctest's).
	minSamples := int((10*opts.Step+3*opts.RateStep)/opts.chartEvery()) + 1
	assert.GreaterOrEqual(t, res.ChartSamples, minSamples)
	svg := readDemoSVG(t, opts.SVG)
	assert.Equal(t, []string{"series-limit", "series-active", "series-queued", "series-admitted", "series-bucket"}, svg.seriesOrder)
	for id, cmds := range svg.series {
		assert.Len(t, cmds, res.ChartSamples, "%s: one command per sample", id)
	}
	assert.Equal(t, markerLabels(res.Updates), svg.markers)
	assert.Equal(t, 2, svg.bands, "disabled from the start to step 2, and from step 7 to step 8")
	// The limit has no value while disabled, the bucket none before the
	// rate phase: their paths start with moves.
	assert.True(t, strings.HasPrefix(svg.series["series-limit"][0], "M"))
	assert.True(t, strings.HasPrefix(svg.series["series-bucket"][0], "M"))
	assert.Contains(t, svg.text, cleanLine, "the verdict is on the chart")
	assert.Contains(t, svg.text, "time since start (s)")
	assert.Contains(t, svg.text, "requests per second")
}

// publishingSteps are the steps that change the configuration.
var publishingSteps = []string{
	"2 enable global=4", "3 grow global=8", "4 shrink global=2", "5 shrink queue calls=1",
	"6a add rule Checkout=1", "6b remove rule Checkout", "7 disable", "8 re-enable global=2",
	"9a rate 200/s burst=20", "9b lower 50/s burst=5", "9c raise 300/s burst=30",
}

func updateSteps(us []demoUpdate) []string {
	var out []string
	for _, u := range us {
		out = append(out, u.Step)
	}
	return out
}

func markerLabels(us []demoUpdate) []string {
	var out []string
	for _, u := range us {
		out = append(out, fmt.Sprintf("%s · gen %d", u.Step, u.Generation))
	}
	return out
}

// svgElem is an element of a parsed SVG document.
type svgElem struct {
	XMLName xml.Name
	Attrs   []xml.Attr `xml:",any,attr"`
	Text    string     `xml:",chardata"`
	Kids    []svgElem  `xml:",any"`
}

func (e svgElem) attr(name string) string {
	for _, a := range e.Attrs {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

// demoSVG is what the demo's test reads of its chart.
type demoSVG struct {
	series      map[string][]string // id -> the path's commands
	seriesOrder []string
	markers     []string // the markers' labels, in order
	bands       int
	text        string // every text, joined by newlines
}

// readDemoSVG parses the chart at path with encoding/xml: an SVG 1.1
// document without scripts.
func readDemoSVG(t *testing.T, path string) demoSVG {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var root svgElem
	require.NoError(t, xml.Unmarshal(b, &root), "the chart parses as XML")
	require.Equal(t, "svg", root.XMLName.Local)
	require.Equal(t, "http://www.w3.org/2000/svg", root.XMLName.Space)
	require.Equal(t, "1.1", root.attr("version"))
	require.NotContains(t, string(b), "<script")
	out := demoSVG{series: map[string][]string{}}
	var texts []string
	var walk func(e svgElem)
	walk = func(e svgElem) {
		switch {
		case e.XMLName.Local == "path" && e.attr("class") == "series":
			out.series[e.attr("id")] = strings.Fields(e.attr("d"))
			out.seriesOrder = append(out.seriesOrder, e.attr("id"))
		case e.XMLName.Local == "g" && e.attr("class") == "marker":
			for _, k := range e.Kids {
				if k.XMLName.Local == "text" {
					out.markers = append(out.markers, k.Text)
				}
			}
		case e.XMLName.Local == "rect" && e.attr("class") == "band":
			out.bands++
		case e.XMLName.Local == "text":
			texts = append(texts, e.Text)
		}
		for _, k := range e.Kids {
			walk(k)
		}
	}
	walk(root)
	out.text = strings.Join(texts, "\n")
	return out
}

// Every document the scenario applies converts, as the server's Controller
// converts it, to the program the observer's tests model in Go.
func TestDemoDocumentsConvert(t *testing.T) {
	for _, tc := range []struct {
		doc  demoDoc
		want kernel.Options
	}{
		{demoDoc{Global: 4, Queue: queueWide}, demoConfig(4, queueWide, 0)},
		{demoDoc{Global: 2, Queue: queueNarrow}, demoConfig(2, queueNarrow, 0)},
		{demoDoc{Global: 2, Queue: queueNarrow, Checkout: 1}, demoConfig(2, queueNarrow, 1)},
		{demoDoc{Global: rateGlobal, Queue: queueWide, Rate: &rateSteps[0].b}, rateConfig(rateSteps[0].b)},
		{demoDoc{Global: rateGlobal, Queue: queueWide, Rate: &rateSteps[2].b}, rateConfig(rateSteps[2].b)},
	} {
		got, err := tc.doc.options()
		require.NoError(t, err, "%s", tc.doc.YAML())
		assert.Equal(t, tc.want, got, "%s", tc.doc.YAML())
	}
}

// cancelOnWrite cancels when a written line contains marker.
type cancelOnWrite struct {
	mu        sync.Mutex
	buf       bytes.Buffer
	marker    string
	cancel    context.CancelFunc
	cancelled time.Time
}

func (w *cancelOnWrite) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cancelled.IsZero() && bytes.Contains(p, []byte(w.marker)) {
		w.cancelled = time.Now()
		w.cancel()
	}
	return w.buf.Write(p)
}

func TestDemoInterruptedInRatePhaseStillDrains(t *testing.T) {
	synctest.Test(t, testDemoInterruptedInRatePhaseStillDrains)
}

func testDemoInterruptedInRatePhaseStillDrains(t *testing.T) {
	onPipeNetwork(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &cancelOnWrite{marker: "9a rate", cancel: cancel}
	opts := shortDemoOptions()
	opts.RateStep = 4 * time.Second // interrupted long before it ends
	opts.SVG = filepath.Join(t.TempDir(), "demo.svg")
	res, err := runDemo(ctx, out, opts)
	require.ErrorIs(t, err, context.Canceled)
	require.False(t, out.cancelled.IsZero())
	assert.Less(t, time.Since(out.cancelled), opts.rateWindow(), "the rate phase stops at once")
	text := out.buf.String()
	assert.True(t, res.OK(), "result %+v\n%s", res, text)
	assert.NotContains(t, text, "9b lower")
	assert.Contains(t, text, "10 stop, seal, drain")
	assert.Equal(t, cleanLine, lastLine(text))
	// The chart of an interrupted run ends with the updates applied.
	assert.Equal(t, publishingSteps[:9], updateSteps(res.Updates))
	svg := readDemoSVG(t, opts.SVG)
	assert.Equal(t, markerLabels(res.Updates), svg.markers)
	for id, cmds := range svg.series {
		assert.Len(t, cmds, res.ChartSamples, id)
	}
}

// The command runs over loopback TCP, its admin API included, and writes
// demo.svg in the current directory by default.
func TestDemoCommandExitsCleanly(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"demo", "-workers", "6", "-step", "30ms", "-seed", "7", "-rate-step", "100ms"}, &stdout, &stderr)
	require.Equal(t, exitOK, code, "stderr: %s\nstdout: %s", stderr.String(), stdout.String())
	assert.Empty(t, stderr.String())
	assert.Contains(t, stdout.String(), "6 client workers, seed 7, step 30ms, rate step 100ms")
	assert.Regexp(t, `served on 127\.0\.0\.1:\d+, `, stdout.String(), "the demo runs a real server and client over loopback")
	assert.Regexp(t, `admin API on http://127\.0\.0\.1:\d+ \(random token\)`, stdout.String())
	assert.Regexp(t, `(?m)^chart: demo\.svg \(\d+ samples, 11 updates marked\)$`, stdout.String())
	assert.Equal(t, cleanLine, lastLine(stdout.String()))
	svg := readDemoSVG(t, filepath.Join(dir, "demo.svg"))
	assert.Len(t, svg.markers, 11)
	assert.Len(t, svg.series, 5)
}

// A chart that cannot be written fails the run (exit status 1), after the
// scenario ran whole and with the verdict still the last line.
func TestDemoCommandFailsWhenTheChartCannotBeWritten(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		onPipeNetwork(t)
		var stdout, stderr bytes.Buffer
		bad := filepath.Join(t.TempDir(), "no such directory", "demo.svg")
		code := run(context.Background(), []string{"demo", "-workers", "8", "-step", "40ms", "-rate-step", "160ms", "-svg", bad}, &stdout, &stderr)
		assert.Equal(t, exitFail, code, "stdout:\n%s", stdout.String())
		assert.Contains(t, stdout.String(), "chart not written: chart: open "+bad)
		assert.Contains(t, stderr.String(), "sluice demo: chart: open "+bad)
		assert.Contains(t, stdout.String(), "9c raise 300/s burst=30")
		assert.Equal(t, cleanLine, lastLine(stdout.String()))
	})
}

func TestDemoInterruptedStillDrains(t *testing.T) {
	synctest.Test(t, testDemoInterruptedStillDrains)
}

func testDemoInterruptedStillDrains(t *testing.T) {
	onPipeNetwork(t)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	defer cancel()
	var out bytes.Buffer
	res, err := runDemo(ctx, &out, shortDemoOptions())
	require.ErrorIs(t, err, context.Canceled)
	assert.True(t, res.OK(), "result %+v", res)
	assert.Equal(t, cleanLine, lastLine(out.String()))
}

func TestCommandLine(t *testing.T) {
	for _, tc := range []struct {
		args       []string
		code       int
		out, err   string // substrings expected on stdout / stderr
		emptyOut   bool
		emptyError bool
	}{
		{args: []string{"help"}, code: exitOK, out: "usage: sluice", emptyError: true},
		{args: nil, code: exitUsage, err: "usage: sluice", emptyOut: true},
		{args: []string{"frobnicate"}, code: exitUsage, err: `unknown subcommand "frobnicate"`, emptyOut: true},
		{args: []string{"demo", "-h"}, code: exitOK, err: "-workers", emptyOut: true},
		{args: []string{"demo", "-nope"}, code: exitUsage, err: "flag provided but not defined", emptyOut: true},
		{args: []string{"demo", "-workers", "2"}, code: exitUsage, err: "-workers must be between 4", emptyOut: true},
		{args: []string{"demo", "-step", "0s"}, code: exitUsage, err: "-step must be at least", emptyOut: true},
		{args: []string{"demo", "-rate-step", "10ms"}, code: exitUsage, err: "-rate-step must be at least", emptyOut: true},
		{args: []string{"demo", "extra"}, code: exitUsage, err: "unexpected arguments", emptyOut: true},
	} {
		t.Run(strings.Join(tc.args, "_"), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tc.args, &stdout, &stderr)
			assert.Equal(t, tc.code, code)
			assert.Contains(t, stdout.String(), tc.out)
			assert.Contains(t, stderr.String(), tc.err)
			if tc.emptyOut {
				assert.Empty(t, stdout.String())
			}
			if tc.emptyError {
				assert.Empty(t, stderr.String())
			}
		})
	}
}

// --- the observer ---

type observerFixture struct {
	obs              *observer
	browse, checkout kernel.MethodID
	cat              *kernel.Catalog
}

func newObserverFixture(t *testing.T) observerFixture {
	t.Helper()
	var b kernel.CatalogBuilder
	f := observerFixture{browse: b.MustAdd(demoService, "Browse"), checkout: b.MustAdd(demoService, "Checkout")}
	f.cat = b.Build()
	f.obs = newObserver(f.cat)
	return f
}

func (f observerFixture) publish(o *kernel.Options) uint64 { return f.obs.publishing(o) }

func global(n int64) *kernel.Options {
	o := demoConfig(n, queueWide, 0)
	return &o
}

func TestObserverCountsWrongGrant(t *testing.T) {
	f := newObserverFixture(t)
	gen := f.publish(global(1))
	e0 := f.obs.currentEpoch()
	require.Equal(t, uint64(1), gen)

	first := f.obs.granted(e0, gen, f.browse)
	require.Zero(t, f.obs.overAdmissions())
	// A second concurrent grant under limit 1: the program never allowed it.
	second := f.obs.granted(e0, gen, f.checkout)
	assert.Equal(t, int64(1), f.obs.overAdmissions())
	ex := f.obs.overExamples()
	require.Len(t, ex, 1)
	assert.Contains(t, ex[0], "global at 2 holders, above bound 1")

	f.obs.released(second)
	f.obs.released(first)
	assert.Zero(t, f.obs.holders("global"))
	assert.Empty(t, f.obs.nonZeroHolders())
	assert.Equal(t, int64(2), f.obs.peak("global"))
}

// A kernel that grants more than the configuration the observer was told
// about is caught with real permits: the kernel gets limit 3, the log says 1.
func TestObserverCatchesOverAdmittingKernel(t *testing.T) {
	f := newObserverFixture(t)
	k, err := kernel.New(kernel.Config{Catalog: f.cat})
	require.NoError(t, err)

	e := f.publish(global(1))
	gen, err := k.Enable(*global(3))
	require.NoError(t, err)
	require.Equal(t, e, gen)

	var permits [2]kernel.Permit
	var holds []*holding
	for i := range permits {
		e0 := f.obs.currentEpoch()
		require.True(t, k.Capture(&permits[i]))
		require.NoError(t, permits[i].Admit(context.Background(), kernel.Request{Method: f.browse}))
		holds = append(holds, f.obs.granted(e0, permits[i].Generation(), f.browse))
	}
	assert.Equal(t, int64(1), f.obs.overAdmissions(), "the second grant exceeds the logged bound")
	for i := range permits {
		f.obs.released(holds[i])
		permits[i].Release()
	}
	k.Seal()
	require.NoError(t, k.Drain(context.Background()))
}

func TestObserverAllowsGrantRacingAShrink(t *testing.T) {
	f := newObserverFixture(t)
	g1 := f.publish(global(4))
	var holds []*holding
	for range 3 {
		holds = append(holds, f.obs.granted(g1, g1, f.browse))
	}
	// The updater bumps the epoch to 2 before Update(limit 2) takes effect:
	// a worker that read epoch 2 may still capture and be granted by the
	// limit-4 program, so a 4th holder is allowed.
	g2 := f.publish(global(2))
	holds = append(holds, f.obs.granted(g2, g1, f.browse))
	assert.Zero(t, f.obs.overAdmissions())

	// Old holders above the shrunk bound are fine, but once a later epoch
	// is read before Capture, the window is [2, 3] and the bound is 2.
	g3 := f.publish(global(2))
	holds = append(holds, f.obs.granted(g3, g3, f.browse))
	assert.Equal(t, int64(1), f.obs.overAdmissions())

	for _, h := range holds {
		f.obs.released(h)
	}
	assert.Zero(t, f.obs.holders("global"))
}

func TestObserverDisabledEpochsDoNotCount(t *testing.T) {
	f := newObserverFixture(t)
	g1 := f.publish(global(2))
	old := f.obs.granted(g1, g1, f.browse) // held across Disable
	f.publish(nil)                         // Disable: bypassing requests are not counted at all
	assert.Equal(t, int64(1), f.obs.holders("global"), "only the old holder")

	// A worker that read the Disable epoch before Capture may have captured
	// the previous program (limit 2): 2 holders are within that bound.
	g3 := f.publish(global(1))
	racing := f.obs.granted(g3-1, g1, f.browse)
	assert.Zero(t, f.obs.overAdmissions())
	f.obs.released(racing)

	// Re-enabled with limit 1 while the old holder remains: a new grant is
	// a second holder of the same state, above 1 (the disabled epoch
	// contributes no bound).
	fresh := f.obs.granted(g3, g3, f.browse)
	assert.Equal(t, int64(1), f.obs.overAdmissions())
	f.obs.released(fresh)
	f.obs.released(old)
	assert.Zero(t, f.obs.holders("global"))
}

func TestObserverCountsScopesOnlyUnderProgramsThatBindThem(t *testing.T) {
	f := newObserverFixture(t)
	g1 := f.publish(global(8))
	var holds []*holding
	for range 3 { // Checkout has no rule: not counted at the method scope
		holds = append(holds, f.obs.granted(g1, g1, f.checkout))
	}
	assert.Zero(t, f.obs.holders(checkoutScope))

	withRule := demoConfig(8, queueWide, 1)
	g2 := f.publish(&withRule)
	holds = append(holds, f.obs.granted(g2, g2, f.checkout))
	assert.Zero(t, f.obs.overAdmissions(), "the first holder under the rule is within 1")
	holds = append(holds, f.obs.granted(g2, g2, f.browse)) // Browse is not bound by the rule
	assert.Zero(t, f.obs.overAdmissions())
	holds = append(holds, f.obs.granted(g2, g2, f.checkout))
	assert.Equal(t, int64(1), f.obs.overAdmissions(), "a second Checkout holder under limit 1")
	assert.Equal(t, int64(2), f.obs.holders(checkoutScope))
	assert.Equal(t, int64(6), f.obs.holders("global"))

	for _, h := range holds {
		f.obs.released(h)
	}
	assert.Empty(t, f.obs.nonZeroHolders())
}

func TestObserverRejectsGrantsByUnpublishedPrograms(t *testing.T) {
	f := newObserverFixture(t)
	g1 := f.publish(global(4))
	f.obs.released(f.obs.granted(g1, 7, f.browse)) // never published
	g2 := f.publish(nil)
	f.obs.released(f.obs.granted(g2, g2, f.browse)) // a Disable grants nothing
	assert.Equal(t, int64(2), f.obs.overAdmissions())
	assert.Len(t, f.obs.overExamples(), 2)
	assert.Empty(t, f.obs.nonZeroHolders())
}

func TestTimelineFormatsRows(t *testing.T) {
	var out bytes.Buffer
	start := time.Now()
	tl := newTimeline(&out, start)
	tl.header()
	tl.row(timelineRow{at: start.Add(1500 * time.Millisecond), gen: 3, step: "4 shrink global=2", limit: 2, active: 8, queued: 5, admitted: 10, rejected: 4, note: "n"})
	tl.row(timelineRow{at: start.Add(2 * time.Second), gen: 7, limit: -1})
	require.NoError(t, tl.Err())
	lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
	require.Len(t, lines, 3)
	assert.Regexp(t, `^ +elapsed +gen +step +limit +active +queued +admitted +rejected +bypassed +note$`, lines[0])
	assert.Regexp(t, `^ +1\.500s +3 +4 shrink global=2 +2 +8 +5 +10 +4 +0 +n$`, lines[1])
	assert.Regexp(t, `^ +2\.000s +7 +· +- +0 +0 +0 +0 +0$`, lines[2])
}

func TestResultLineAndStatus(t *testing.T) {
	assert.Equal(t, cleanLine, demoResult{CountersZero: true}.InvariantsLine())
	assert.True(t, demoResult{CountersZero: true}.OK())
	bad := demoResult{OverAdmissions: 3, CountersZero: true}
	assert.False(t, bad.OK())
	assert.Equal(t, "invariants: over_admissions=3 counters_zero=true rate_over=0 unexpected_errors=0", bad.InvariantsLine())
	assert.False(t, demoResult{}.OK(), "counters not zero fails the run")
	assert.Equal(t, "invariants: over_admissions=0 counters_zero=false rate_over=0 unexpected_errors=0", demoResult{}.InvariantsLine())
	overRate := demoResult{CountersZero: true, RateOver: 25}
	assert.False(t, overRate.OK(), "a grant above the rate bound fails the run")
	assert.Equal(t, "invariants: over_admissions=0 counters_zero=true rate_over=25 unexpected_errors=0", overRate.InvariantsLine())
	unexpected := demoResult{CountersZero: true, UnexpectedErrors: 2}
	assert.False(t, unexpected.OK(), "an unexpected error fails the run")
	assert.Equal(t, "invariants: over_admissions=0 counters_zero=true rate_over=0 unexpected_errors=2", unexpected.InvariantsLine())
}

// --- the rate check ---

// fakeClock drives the observer's clock by hand.
type fakeClock struct{ now time.Time }

func (c *fakeClock) at(ms int) time.Time {
	return time.Unix(1_000_000, 0).Add(time.Duration(ms) * time.Millisecond)
}
func (c *fakeClock) set(ms int) { c.now = c.at(ms) }

func (f observerFixture) withClock() *fakeClock {
	c := &fakeClock{}
	c.set(0)
	f.obs.now = func() time.Time { return c.now }
	return c
}

// publishRate publishes b (with the rate phase's config) at begun, and
// records the kernel call as returned at done.
func (f observerFixture) publishRate(c *fakeClock, b bucket, begun, done int) uint64 {
	c.set(begun)
	o := rateConfig(b)
	e := f.obs.publishingRate(&o, b)
	c.set(done)
	f.obs.published(e)
	return e
}

// grant counts n grants by gen at ms (each released at once).
func (f observerFixture) grant(c *fakeClock, gen uint64, ms, n int) {
	c.set(ms)
	for range n {
		f.obs.released(f.obs.granted(gen, gen, f.browse))
	}
}

func TestObserverCountsOverRateGrants(t *testing.T) {
	f := newObserverFixture(t)
	c := f.withClock()
	g1 := f.publishRate(c, bucket{TokenLimit: 5, PerSecond: 10}, 0, 1)
	f.grant(c, g1, 2, 5) // the full bucket: fine
	require.Zero(t, f.obs.rateCheck().Over)

	// 3 more within the same millisecond: the bucket cannot have them.
	f.grant(c, g1, 2, 3)
	rep := f.obs.rateCheck()
	assert.Equal(t, 8, rep.Grants)
	assert.Equal(t, int64(3), rep.Over)
	assert.Equal(t, int64(-3), rep.Margin)
	assert.Contains(t, rep.Detail, "3 over: 8 grants by generations 1..1")

	// 100 ms later one token has accrued: the excess does not grow by
	// one more grant, and does by two.
	f.grant(c, g1, 102, 1)
	assert.Equal(t, int64(3), f.obs.rateCheck().Over)
	f.grant(c, g1, 102, 1)
	assert.Equal(t, int64(4), f.obs.rateCheck().Over)
	assert.Zero(t, f.obs.overAdmissions(), "one holder at a time: no concurrency over-admission")
}

// A bucket refilled for free when its tokenLimit is raised is caught in
// the family of the raise (at most min(5, 30) tokens carried) and in the
// earlier one.
func TestObserverCountsFreeBurstAtRaise(t *testing.T) {
	f := newObserverFixture(t)
	c := f.withClock()
	g1 := f.publishRate(c, bucket{TokenLimit: 5, PerSecond: 10}, 0, 1)
	f.grant(c, g1, 1, 5)
	g2 := f.publishRate(c, bucket{TokenLimit: 30, PerSecond: 10}, 500, 501)
	f.grant(c, g2, 502, 20)
	rep := f.obs.rateCheck()
	// Family 2: 20 grants, at most 5 carried + 0 accrued. Family 1: 25
	// grants, at most 5 + 10/s × 0.502 s.
	assert.Equal(t, int64(15), rep.Over, rep.Detail)
	assert.Equal(t, 25, rep.Grants)
}

func TestObserverRateWindowFollowsPublications(t *testing.T) {
	f := newObserverFixture(t)
	c := f.withClock()
	g1 := f.publishRate(c, bucket{TokenLimit: 20, PerSecond: 100}, 0, 10)
	f.grant(c, g1, 10, 20)
	// Lowered at some instant in [1000, 1010]: until it returned, the old
	// rate may still apply (100 tokens by 1000 ms, 1 more by 1010 ms).
	g2 := f.publishRate(c, bucket{TokenLimit: 5, PerSecond: 10}, 1000, 1010)
	f.grant(c, g1, 1010, 101)
	assert.Zero(t, f.obs.rateCheck().Over)
	// Grants by the new generation draw on at most 5 carried tokens.
	f.grant(c, g2, 1010, 5)
	rep := f.obs.rateCheck()
	assert.Equal(t, int64(5), rep.Over, "family 1 had nothing left: %s", rep.Detail)

	// A program without a rate ends the run; its grants are not checked,
	// and a bucket added again starts full (a new lineage).
	f2 := newObserverFixture(t)
	c2 := f2.withClock()
	h1 := f2.publishRate(c2, bucket{TokenLimit: 5, PerSecond: 10}, 0, 1)
	f2.grant(c2, h1, 1, 5)
	c2.set(2)
	h2 := f2.publish(global(8))
	f2.grant(c2, h2, 3, 50)
	h3 := f2.publishRate(c2, bucket{TokenLimit: 5, PerSecond: 10}, 4, 5)
	f2.grant(c2, h3, 5, 5)
	rep = f2.obs.rateCheck()
	assert.Zero(t, rep.Over, rep.Detail)
	assert.Equal(t, 10, rep.Grants)
	assert.Zero(t, rep.Margin, "both buckets were emptied at once")
}

func TestObserverRequiresTheBucketItChecks(t *testing.T) {
	f := newObserverFixture(t)
	o := rateConfig(bucket{TokenLimit: 5, PerSecond: 10})
	assert.Panics(t, func() { f.obs.publishing(&o) }, "a rate published without telling the observer")
	assert.Panics(t, func() { f.obs.publishingRate(&o, bucket{TokenLimit: 5, PerSecond: 20}) }, "another bucket")
	plain := demoConfig(4, queueWide, 0)
	assert.Panics(t, func() { f.obs.publishingRate(&plain, bucket{TokenLimit: 5, PerSecond: 10}) }, "no bucket in the candidate")
}

// simulateBucket runs a reference token bucket through the demo's three
// buckets (publication instants inside the observer's windows, greedy
// demand, some grants by the previous generation, grants observed late)
// and returns the observer's rate check. freeBurst refills the bucket when
// its capacity is raised, as a buggy limiter would.
func simulateBucket(t *testing.T, seed uint64, freeBurst bool) rateReport {
	f := newObserverFixture(t)
	c := f.withClock()
	rng := rand.New(rand.NewPCG(seed, 7))
	type pending struct {
		gen uint64
		at  int
	}
	var (
		queue            []pending
		gens             []uint64
		milli, cap, rate int64 // the bucket in thousandths of a token; rate per ms
		live             bool
	)
	buckets := []bucket{{TokenLimit: 20, PerSecond: 200}, {TokenLimit: 5, PerSecond: 50}, {TokenLimit: 30, PerSecond: 300}}
	type pub struct{ begun, commit, done int }
	var pubs []pub
	for i := range buckets {
		at := 100 + 1000*i
		pubs = append(pubs, pub{begun: at, commit: at + rng.IntN(4), done: at + 4 + rng.IntN(3)})
	}
	for ms := 0; ms < 3200; ms++ {
		c.set(ms)
		for i, p := range pubs {
			if ms == p.begun {
				o := rateConfig(buckets[i])
				gens = append(gens, f.obs.publishingRate(&o, buckets[i]))
			}
			if ms == p.commit {
				b := buckets[i]
				switch {
				case !live:
					milli = b.TokenLimit * 1000 // a new bucket starts full
				case freeBurst && b.TokenLimit*1000 > cap:
					milli = b.TokenLimit * 1000
				default:
					milli = min(milli, b.TokenLimit*1000)
				}
				live, cap, rate = true, b.TokenLimit*1000, b.PerSecond
			}
			if ms == p.done {
				f.obs.published(gens[i])
			}
		}
		if live && ms < 3190 { // then the grants still pending are observed
			if ms > 0 {
				milli = min(milli+rate, cap)
			}
			for range 3 { // demand above every rate
				if milli < 1000 {
					break
				}
				milli -= 1000
				// Captured by the generation committed last, or by the
				// one before (captured before the publication).
				committed := 0
				for i, p := range pubs {
					if ms >= p.commit {
						committed = i
					}
				}
				g := gens[committed]
				if committed > 0 && rng.IntN(4) == 0 {
					g = gens[committed-1]
				}
				queue = append(queue, pending{gen: g, at: ms + rng.IntN(3)})
			}
		}
		kept := queue[:0]
		for _, p := range queue {
			if p.at <= ms {
				f.obs.released(f.obs.granted(p.gen, p.gen, f.browse))
			} else {
				kept = append(kept, p)
			}
		}
		queue = kept
	}
	require.Empty(t, queue)
	return f.obs.rateCheck()
}

func TestRateBoundHoldsForAReferenceBucket(t *testing.T) {
	for seed := range uint64(20) {
		rep := simulateBucket(t, seed, false)
		require.Zero(t, rep.Over, "seed %d: %s", seed, rep.Detail)
		require.Greater(t, rep.Grants, 500)
		// The bound is tight: the greedy demand comes within a couple of
		// tokens of it.
		require.LessOrEqual(t, rep.Margin, int64(2), "seed %d: %s", seed, rep.Detail)

		bad := simulateBucket(t, seed, true)
		require.GreaterOrEqual(t, bad.Over, int64(20), "seed %d: a free refill to 30 at the raise: %s", seed, bad.Detail)
	}
}

func TestRateBar(t *testing.T) {
	assert.Equal(t, "", rateBar(9, 50))
	assert.Equal(t, "#####", rateBar(52, 50))
	assert.Equal(t, "####", rateBar(49, 50))
	assert.Equal(t, "#####++", rateBar(70, 50))
	assert.Len(t, rateBar(10000, 300), 60)
}
