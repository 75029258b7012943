package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sluicerpc/sluice/kernel"
)

// The demo starts workers, a sampler and queue timers: none may outlive it.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const cleanLine = "invariants: over_admissions=0 counters_zero=true"

func shortDemoOptions() demoOptions {
	o := defaultDemoOptions()
	o.Workers = 8
	o.Step = 40 * time.Millisecond
	return o
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}

func TestDemoShortRunKeepsInvariants(t *testing.T) {
	var out bytes.Buffer
	res, err := runDemo(context.Background(), &out, shortDemoOptions())
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
		"7 disable", "8 re-enable global=2", "8b old holders release", "9 stop, seal, drain",
	} {
		assert.Contains(t, text, step)
	}
	assert.NotContains(t, text, "precondition not reached")
}

func TestDemoCommandExitsCleanly(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"demo", "-workers", "6", "-step", "30ms", "-seed", "7"}, &stdout, &stderr)
	require.Equal(t, exitOK, code, "stderr: %s\nstdout: %s", stderr.String(), stdout.String())
	assert.Empty(t, stderr.String())
	assert.Contains(t, stdout.String(), "6 workers, seed 7, step 30ms")
	assert.Equal(t, cleanLine, lastLine(stdout.String()))
}

func TestDemoInterruptedStillDrains(t *testing.T) {
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
	assert.Equal(t, "invariants: over_admissions=3 counters_zero=true", bad.InvariantsLine())
	assert.False(t, demoResult{}.OK(), "counters not zero fails the run")
	assert.Equal(t, "invariants: over_admissions=0 counters_zero=false", demoResult{}.InvariantsLine())
}
