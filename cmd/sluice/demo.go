package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicerpc/sluice/client"
	"github.com/sluicerpc/sluice/kernel"
	"github.com/sluicerpc/sluice/limiters/concurrency"
	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/protocol/status"
	"github.com/sluicerpc/sluice/server"
	"github.com/sluicerpc/sluice/spi"
)

// demoOptions configures the demo. The command line sets Workers, Seed,
// Step, RateStep and SVG; tests may shorten the rest.
type demoOptions struct {
	Workers int           // worker goroutines
	Seed    uint64        // seed of every worker's random source
	Step    time.Duration // pause after each step
	// RateStep is how long each bucket of the rate phase (steps 9a-9c)
	// stays in force; a row is printed every quarter of it.
	RateStep time.Duration
	// Sample is the interval between sample rows; 0 means Step/2.
	Sample time.Duration
	// LongHolders is how many permits are held across Disable and the
	// re-Enable of step 8.
	LongHolders int
	// HoldMin and HoldMax bound how long a worker holds a permit.
	HoldMin, HoldMax time.Duration
	// WaitBound bounds how long a step waits for its precondition.
	WaitBound time.Duration
	// DrainTimeout bounds the final Drain.
	DrainTimeout time.Duration
	// SVG is the path the chart is written to; empty: no chart.
	SVG string
}

func defaultDemoOptions() demoOptions {
	return demoOptions{
		Workers:      16,
		Seed:         1,
		Step:         300 * time.Millisecond,
		RateStep:     time.Second,
		LongHolders:  2,
		HoldMin:      2 * time.Millisecond,
		HoldMax:      12 * time.Millisecond,
		WaitBound:    2 * time.Second,
		DrainTimeout: 5 * time.Second,
		SVG:          "demo.svg",
	}
}

func (o demoOptions) validate() error {
	switch {
	case o.Workers < 4 || o.Workers > 4096:
		return fmt.Errorf("-workers must be between 4 and 4096 (the scenario needs more than 2 concurrent holders), got %d", o.Workers)
	case o.Step < minStep:
		return fmt.Errorf("-step must be at least %s, got %s", minStep, o.Step)
	case o.RateStep < rateWindows*minStep:
		return fmt.Errorf("-rate-step must be at least %s, got %s", rateWindows*minStep, o.RateStep)
	case o.Sample < 0:
		return fmt.Errorf("sample interval must not be negative, got %s", o.Sample)
	case o.LongHolders < 1 || o.LongHolders >= o.Workers:
		return fmt.Errorf("long holders must be between 1 and workers-1, got %d", o.LongHolders)
	case o.HoldMin <= 0 || o.HoldMax < o.HoldMin:
		return fmt.Errorf("hold times must satisfy 0 < min <= max, got %s..%s", o.HoldMin, o.HoldMax)
	case o.WaitBound <= 0 || o.DrainTimeout <= 0:
		return errors.New("timeouts must be positive")
	}
	return nil
}

func (o demoOptions) sampleEvery() time.Duration {
	if o.Sample > 0 {
		return o.Sample
	}
	return o.Step / 2
}

// chartEvery is the interval between the chart's samples: two thirds of
// the shorter of the sample rows' and the rate windows' intervals (100ms
// by default), so that each row and each rate window spans more than one.
func (o demoOptions) chartEvery() time.Duration {
	return max(min(o.sampleEvery(), o.rateWindow())*2/3, time.Millisecond)
}

// rateWindow is the interval between the rows of the rate phase.
func (o demoOptions) rateWindow() time.Duration { return o.RateStep / rateWindows }

// The demo's catalog and configurations.
const (
	demoService    = "shop"
	checkoutMethod = demoService + "/Checkout"
	globalState    = "global/concurrency" // the kernel's name of the Global limit's state
	checkoutScope  = "method:" + checkoutMethod
)

var (
	queueWide   = kernel.QueuePolicy{MaxQueuedCalls: 8, MaxQueuedBytes: 64 << 10, MaxQueueDelay: 50 * time.Millisecond}
	queueNarrow = kernel.QueuePolicy{MaxQueuedCalls: 1, MaxQueuedBytes: 64 << 10, MaxQueueDelay: 50 * time.Millisecond}
)

// demoConfig builds a complete candidate in Go: a Global concurrency
// limit, a queue policy, and a concurrency rule on Checkout when
// checkout > 0. It is the program a demoDoc without a rate describes: the
// observer's tests use it, and the demo's tests check that every document
// of the scenario converts to it (the demo itself tells the observer what
// the document converts to).
func demoConfig(global int64, q kernel.QueuePolicy, checkout int64) kernel.Options {
	o := kernel.Options{
		Global: kernel.Rule{Limits: []spi.Spec{concurrency.Spec(global)}},
		Queue:  q,
	}
	if checkout > 0 {
		o.Methods = map[string]kernel.Rule{checkoutMethod: {Limits: []spi.Spec{concurrency.Spec(checkout)}}}
	}
	return o
}

// demoResult is what the demo observed.
type demoResult struct {
	OverAdmissions int64
	CountersZero   bool
	// RateOver is the rate check's excess of grants over the token
	// bucket's bound (see observer.rateCheck); RateGrants is how many
	// grants it checked and RateDetail where it came closest (or over).
	RateOver   int64
	RateGrants int
	RateDetail string
	// CounterProblems says which counter was not zero at the end.
	CounterProblems []string
	// OverExamples describes the first over-admissions.
	OverExamples []string
	// UnexpectedErrors counts the workers' errors that are not a refusal
	// the scenario expects (see errorCheck); UnexpectedExamples describes
	// the first ones.
	UnexpectedErrors   int64
	UnexpectedExamples []string
	// Updates are the changes applied through the admin API, in order,
	// with the generation each PUT or DELETE answered; ChartSamples is
	// the number of samples the chart drew (0 without a chart).
	Updates      []demoUpdate
	ChartSamples int
}

// OK reports whether every invariant held and no call ended with an
// unexpected error.
func (r demoResult) OK() bool {
	return r.OverAdmissions == 0 && r.CountersZero && r.RateOver == 0 && r.UnexpectedErrors == 0
}

// InvariantsLine is the demo's last line of output.
func (r demoResult) InvariantsLine() string {
	return fmt.Sprintf("invariants: over_admissions=%d counters_zero=%t rate_over=%d unexpected_errors=%d",
		r.OverAdmissions, r.CountersZero, r.RateOver, r.UnexpectedErrors)
}

// demo is one run of the scenario.
type demo struct {
	opts   demoOptions
	srv    *server.Server
	cli    *client.Client
	addr   string
	served chan error
	k      *kernel.Kernel // the server's admission kernel: read (Stats), never written
	adm    *demoAdmin     // the admin API: every change of the scenario goes through it
	obs    *observer
	chart  chartRecorder
	// step is the name of the step in progress (the scenario's
	// goroutine only).
	step     string
	tl       *timeline
	browse   kernel.MethodID
	checkout kernel.MethodID

	admitted  atomic.Uint64 // grants by a program
	bypassed  atomic.Uint64 // requests that ran while disabled
	bypassing atomic.Int64  // of which still running
	errs      errorCheck    // the workers' errors: expected refusals, and the others

	// Long holders: the next longWanted grants are held until
	// longRelease is closed.
	longWanted  atomic.Int64
	longHeld    atomic.Int64
	longRelease chan struct{}
	longOnce    sync.Once

	// rateRows is set during the rate phase, which prints its own rows:
	// the sampler is quiet.
	rateRows atomic.Bool
	// bucketInForce is the Global token bucket's rate in force, per
	// second (0: none), set when a change's answer arrived.
	bucketInForce atomic.Int64
}

func newDemo(w io.Writer, opts demoOptions) (*demo, error) {
	d := &demo{
		opts:        opts,
		longRelease: make(chan struct{}),
		tl:          newTimeline(w, time.Now()),
		served:      make(chan error, 1),
	}
	// The shop service: both methods hold the call for the duration
	// the worker asked for (see handle).
	mux := server.NewMux()
	mux.HandleRaw(demoService, "Browse", func(ctx context.Context, req []byte) ([]byte, error) { return d.handle(ctx, d.browse, req) })
	mux.HandleRaw(demoService, "Checkout", func(ctx context.Context, req []byte) ([]byte, error) { return d.handle(ctx, d.checkout, req) })
	srv, err := server.New(mux, server.Options{})
	if err != nil {
		return nil, err
	}
	d.srv, d.k = srv, srv.Admission()
	cat := d.k.Catalog()
	d.browse, _ = cat.Lookup(demoService + "/Browse")
	d.checkout, _ = cat.Lookup(checkoutMethod)
	d.obs = newObserver(cat)
	return d, nil
}

// start serves the shop service on a loopback port, starts its admin API
// on another, and dials the service.
func (d *demo) start() error {
	l, err := listen("127.0.0.1:0")
	if err != nil {
		return err
	}
	d.addr = l.Addr().String()
	go func() { d.served <- d.srv.Serve(l) }()
	if d.adm, err = startDemoAdmin(d.srv); err != nil {
		_ = d.srv.Close()
		<-d.served
		return fmt.Errorf("admin API: %w", err)
	}
	if d.adm.gen != d.obs.currentEpoch() {
		d.adm.stop()
		_ = d.srv.Close()
		<-d.served
		return fmt.Errorf("admin API: the server starts at generation %d, the observer at epoch %d", d.adm.gen, d.obs.currentEpoch())
	}
	ctx, cancel := context.WithTimeout(context.Background(), d.opts.WaitBound)
	defer cancel()
	d.cli, err = client.Dial(ctx, []string{d.addr}, client.Options{Dialer: dialer})
	if err != nil {
		d.adm.stop()
		_ = d.srv.Close()
		<-d.served
		return err
	}
	return nil
}

// runDemo runs the scenario, printing the timeline to w, and returns what
// it observed. The last line written is the invariants line. Cancelling ctx
// ends the scenario early; the demo still stops its workers, drains the
// kernel and checks the invariants. runDemo returns an error when a step
// could not be carried out (the invariants are still reported).
func runDemo(ctx context.Context, w io.Writer, opts demoOptions) (demoResult, error) {
	if err := opts.validate(); err != nil {
		return demoResult{}, err
	}
	d, err := newDemo(w, opts)
	if err != nil {
		return demoResult{}, err
	}
	if err := d.start(); err != nil {
		return demoResult{}, err
	}
	d.tl.printf("sluice demo: service %s (Browse, Checkout) served on %s, %d client workers, seed %d, step %s, rate step %s",
		demoService, d.addr, opts.Workers, opts.Seed, opts.Step, opts.RateStep)
	d.tl.printf("admin API on http://%s (random token): each step is a configuration document, PUT /v1/config with If-Match the generation in force",
		d.adm.addr)
	d.tl.header()

	// Workers are stopped by finish, not by ctx, so an interrupted run
	// still ends with every permit released.
	workCtx, stopWork := context.WithCancel(context.Background())
	var workers sync.WaitGroup
	for i := range opts.Workers {
		workers.Go(func() { d.worker(workCtx, i) })
	}
	sampleCtx, stopSampling := context.WithCancel(context.Background())
	var sampler sync.WaitGroup
	sampler.Go(func() { d.sample(sampleCtx) })
	sampler.Go(func() { d.record(sampleCtx) })

	scriptErr := d.script(ctx)

	stopSampling()
	sampler.Wait()
	res, finishErr := d.finish(stopWork, &workers)
	_, res.Updates = d.chart.snapshot()
	var chartErr error
	res.ChartSamples, chartErr = d.writeChart(res)
	d.report(res, chartErr)
	return res, errors.Join(scriptErr, finishErr, chartErr, d.tl.Err())
}

// worker calls Browse or Checkout (three in ten) over the client, asking
// the handler to hold the call for a random time, until ctx ends. The
// server captures, admits, holds and releases; the handler reports to the
// observer (see handle).
func (d *demo) worker(ctx context.Context, id int) {
	rng := rand.New(rand.NewPCG(d.opts.Seed, uint64(id)))
	body := make([]byte, holdBodySize, holdBodySize+4<<10)
	for ctx.Err() == nil {
		method := demoService + "/Browse"
		if rng.IntN(10) < 3 {
			method = checkoutMethod
		}
		hold := d.opts.HoldMin + time.Duration(rng.Int64N(int64(d.opts.HoldMax-d.opts.HoldMin)+1))
		// e0 is read before the request is sent, so before the server
		// captures its program (see observer).
		binary.LittleEndian.PutUint64(body[0:], uint64(hold))
		binary.LittleEndian.PutUint64(body[8:], d.obs.currentEpoch())
		payload := body[:holdBodySize+rng.IntN(4<<10-256+1)+256-holdBodySize]
		if _, err := d.cli.CallRaw(ctx, method, payload); err != nil {
			if ctx.Err() == nil { // else the demo is stopping: not an outcome
				d.errs.add(method, err)
			}
			sleepCtx(ctx, hold) // back off before the next request
		}
	}
}

// holdBodySize is the request header of the demo's calls: the hold time
// and the worker's epoch, 8 bytes each; padding follows.
const holdBodySize = 16

// handle is the shop handler, running under the permit the server's
// admission granted (or bypassing admission when it was disabled): it
// counts the holder in the observer, holds, and uncounts it before the
// server releases the permit.
func (d *demo) handle(ctx context.Context, m kernel.MethodID, req []byte) ([]byte, error) {
	if len(req) < holdBodySize {
		return nil, status.New(protocol.CodeInvalidArgument, "short demo request")
	}
	hold := time.Duration(binary.LittleEndian.Uint64(req[0:]))
	e0 := binary.LittleEndian.Uint64(req[8:])
	info, _ := server.CallInfoFromContext(ctx)
	if info.Generation == 0 {
		// Disabled when the server parsed the request: not counted.
		d.bypassed.Add(1)
		d.bypassing.Add(1)
		sleepCtx(ctx, hold)
		d.bypassing.Add(-1)
		return nil, nil
	}
	h := d.obs.granted(e0, info.Generation, m)
	d.admitted.Add(1)
	if d.takeLongHold() {
		d.longHeld.Add(1)
		select {
		case <-d.longRelease:
		case <-ctx.Done():
		}
		d.longHeld.Add(-1)
	} else {
		sleepCtx(ctx, hold)
	}
	d.obs.released(h)
	return nil, nil
}

func (d *demo) rejected() uint64 { return d.errs.rejected() }

// takeLongHold claims one wanted long hold, if any is wanted.
func (d *demo) takeLongHold() bool {
	for {
		n := d.longWanted.Load()
		if n <= 0 {
			return false
		}
		if d.longWanted.CompareAndSwap(n, n-1) {
			return true
		}
	}
}

func (d *demo) releaseLongHolders() {
	d.longWanted.Store(0)
	d.longOnce.Do(func() { close(d.longRelease) })
}

// sample prints a sample row periodically until ctx ends.
func (d *demo) sample(ctx context.Context) {
	t := time.NewTicker(d.opts.sampleEvery())
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if !d.rateRows.Load() {
				d.tl.row(d.snapshot(d.k.Stats(), "", ""))
			}
		}
	}
}

// snapshot builds a table row from st and the demo's counters.
func (d *demo) snapshot(st kernel.Stats, step, note string) timelineRow {
	limit := int64(-1)
	if st.Enabled {
		if sc, ok := st.Scope(globalState); ok {
			limit = sc.Limit
		}
	}
	return timelineRow{
		at:       time.Now(),
		gen:      st.Generation,
		step:     step,
		limit:    limit,
		active:   d.obs.holders("global"),
		queued:   st.QueuedCalls,
		admitted: d.admitted.Load(),
		rejected: d.rejected(),
		bypassed: d.bypassed.Load(),
		note:     note,
	}
}

// scenarioStep is one scripted step: run publishes and returns the note of
// its row.
type scenarioStep struct {
	name string
	run  func(ctx context.Context) (note string, err error)
}

// script runs steps 1 to 8, printing a row after each and pausing Step,
// then the rate phase (steps 9a to 9c).
func (d *demo) script(ctx context.Context) error {
	for _, s := range d.steps() {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("interrupted before step %q: %w", s.name, err)
		}
		d.errs.stepStarts(s.name)
		d.step = s.name
		note, err := s.run(ctx)
		if err != nil {
			return fmt.Errorf("step %q: %w", s.name, err)
		}
		d.tl.row(d.snapshot(d.k.Stats(), s.name, note))
		sleepCtx(ctx, d.opts.Step)
	}
	return d.ratePhase(ctx)
}

func (d *demo) steps() []scenarioStep {
	return []scenarioStep{
		{"1 start (disabled)", func(context.Context) (string, error) {
			return "workers bypass admission", nil
		}},
		{"2 enable global=4", func(context.Context) (string, error) {
			return "queue calls=8 bytes=64KiB delay=50ms", d.apply(demoDoc{Global: 4, Queue: queueWide}, false)
		}},
		{"3 grow global=8", func(context.Context) (string, error) {
			return "exactly 4 more may enter; waiters are woken", d.apply(demoDoc{Global: 8, Queue: queueWide}, false)
		}},
		{"4 shrink global=2", func(ctx context.Context) (string, error) {
			met := d.waitFor(ctx, func() bool { return d.obs.holders("global") > 2 })
			before := d.obs.holders("global")
			if err := d.apply(demoDoc{Global: 2, Queue: queueWide}, true); err != nil {
				return "", err
			}
			return fmt.Sprintf("%d active at the shrink; they finish, nobody new enters until active < 2", before) + d.unmet(met), nil
		}},
		{"5 shrink queue calls=1", func(ctx context.Context) (string, error) {
			met := d.waitFor(ctx, func() bool { return d.k.Stats().QueuedCalls >= 2 })
			before := d.k.Stats().QueuedCalls
			if err := d.apply(demoDoc{Global: 2, Queue: queueNarrow}, true); err != nil {
				return "", err
			}
			return fmt.Sprintf("%d queued at the shrink; none evicted, new waiters refused until < 1", before) + d.unmet(met), nil
		}},
		{"6a add rule Checkout=1", func(context.Context) (string, error) {
			return "method shop/Checkout concurrency 1", d.apply(demoDoc{Global: 2, Queue: queueNarrow, Checkout: 1}, false)
		}},
		{"6b remove rule Checkout", func(context.Context) (string, error) {
			peak := d.obs.peak(checkoutScope)
			return fmt.Sprintf("Checkout peak under the rule: %d", peak), d.apply(demoDoc{Global: 2, Queue: queueNarrow}, true)
		}},
		{"7 disable", func(ctx context.Context) (string, error) {
			want := int64(d.opts.LongHolders)
			d.longWanted.Store(want)
			met := d.waitFor(ctx, func() bool { return d.longHeld.Load() == want })
			d.longWanted.Store(0)
			if err := d.disable(); err != nil {
				return "", err
			}
			return fmt.Sprintf("%d long holders keep their permits; new requests bypass", d.longHeld.Load()) + d.unmet(met), nil
		}},
		{"8 re-enable global=2", func(context.Context) (string, error) {
			held := d.longHeld.Load()
			if err := d.apply(demoDoc{Global: 2, Queue: queueWide}, true); err != nil {
				return "", err
			}
			return fmt.Sprintf("%d permits from before Disable still held and counted", held), nil
		}},
		{"8b old holders release", func(context.Context) (string, error) {
			d.releaseLongHolders()
			return "their units go to the queued waiters", nil
		}},
	}
}

// unmet annotates a step whose precondition did not happen within
// WaitBound (the step is still carried out).
func (d *demo) unmet(met bool) string {
	if met {
		return ""
	}
	return fmt.Sprintf(" (precondition not reached within %s)", d.opts.WaitBound)
}

// waitFor polls cond until it holds, ctx ends or WaitBound passes.
func (d *demo) waitFor(ctx context.Context, cond func() bool) bool {
	deadline := time.Now().Add(d.opts.WaitBound)
	t := time.NewTicker(200 * time.Microsecond)
	defer t.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
	}
	return true
}

// apply applies c through the admin API: its dry run first when plan is
// set (printed before the step's row), then PUT /v1/config with If-Match
// the generation in force. The observer logs the program (as the server's
// Controller converts the same document) before the request is sent,
// which bumps its epoch, and is told when the answer arrived; the answer's
// generation must be that epoch.
func (d *demo) apply(c demoDoc, plan bool) error {
	o, err := c.options()
	if err != nil {
		return fmt.Errorf("the demo's document does not convert: %w", err)
	}
	if plan {
		p, err := d.adm.plan(c.YAML())
		if err != nil {
			return err
		}
		lines, err := planLines(p)
		if err != nil {
			return err
		}
		for i, l := range lines {
			lines[i] = "              " + l // under the step column
		}
		d.tl.lines(lines)
	}
	d.errs.admission.Store(true) // before any program can refuse
	var e uint64
	if c.Rate != nil {
		d.errs.rate.Store(true) // before any bucket can refuse
		e = d.obs.publishingRate(&o, *c.Rate)
	} else {
		e = d.obs.publishing(&o)
	}
	gen, err := d.adm.put(c.YAML())
	d.obs.published(e)
	return d.published(e, gen, err, c.Rate, true)
}

// disable disables admission through the admin API (DELETE
// /v1/config/admission), logged in the observer like apply.
func (d *demo) disable() error {
	e := d.obs.publishing(nil)
	gen, err := d.adm.disable()
	d.obs.published(e)
	return d.published(e, gen, err, nil, false)
}

// published checks that the change published the observer's epoch and
// records it for the chart.
func (d *demo) published(epoch, gen uint64, err error, rate *bucket, enabled bool) error {
	if err != nil {
		return fmt.Errorf("epoch %d: %w", epoch, err)
	}
	if gen != epoch {
		return fmt.Errorf("the admin API published generation %d but the observer logged epoch %d", gen, epoch)
	}
	var perSecond int64
	if rate != nil {
		perSecond = rate.PerSecond
	}
	d.bucketInForce.Store(perSecond)
	d.chart.update(demoUpdate{Step: d.step, Generation: gen, Enabled: enabled, At: time.Now()})
	return nil
}

// finish is step 10: stop the workers (every permit is released), Seal,
// Drain, and check that every counter is back to zero.
func (d *demo) finish(stopWork context.CancelFunc, workers *sync.WaitGroup) (demoResult, error) {
	stopWork()
	d.releaseLongHolders()
	workers.Wait()
	d.adm.stop()

	// The client's calls have ended; the server's end as their contexts
	// are cancelled. Stop seals admission (queued requests end
	// Unavailable), waits for the calls in flight and drains the kernel.
	_ = d.cli.Close()
	var problems []string
	ctx, cancel := context.WithTimeout(context.Background(), d.opts.DrainTimeout)
	drainErr := d.srv.Stop(ctx)
	cancel()
	if err := <-d.served; !errors.Is(err, server.ErrServerClosed) {
		problems = append(problems, fmt.Sprintf("Serve: %v", err))
	}
	if drainErr != nil {
		drainErr = fmt.Errorf("Stop: %w", drainErr)
		problems = append(problems, drainErr.Error())
	}
	if sc := d.srv.Stats().ServerCalls; sc.Active != 0 || sc.Reserved != 0 {
		problems = append(problems, fmt.Sprintf("server calls active=%d reserved=%d", sc.Active, sc.Reserved))
	}
	final := d.k.Stats()
	problems = append(problems, counterProblems(final, true)...)
	for _, h := range d.obs.nonZeroHolders() {
		problems = append(problems, "demo holders "+h)
	}
	if n := d.bypassing.Load(); n != 0 {
		problems = append(problems, fmt.Sprintf("demo bypassing=%d", n))
	}

	note := "all released, sealed, drained"
	if len(problems) > 0 {
		note = "counters not zero"
	}
	d.tl.row(d.snapshot(final, "10 stop, seal, drain", note))
	rate := d.obs.rateCheck()
	unexpected, examples := d.errs.unexpectedErrors()
	return demoResult{
		UnexpectedErrors:   unexpected,
		UnexpectedExamples: examples,
		OverAdmissions:     d.obs.overAdmissions(),
		CountersZero:       len(problems) == 0,
		RateOver:           rate.Over,
		RateGrants:         rate.Grants,
		RateDetail:         rate.Detail,
		CounterProblems:    problems,
		OverExamples:       d.obs.overExamples(),
	}, drainErr
}

// counterProblems lists the kernel counters of st that are not zero. Live
// programs are only expected to be zero once drained. A rate state's InUse
// is taken quota, which stays taken: only its waiters must be zero.
func counterProblems(st kernel.Stats, drained bool) []string {
	var out []string
	if st.QueuedCalls != 0 {
		out = append(out, fmt.Sprintf("QueuedCalls=%d", st.QueuedCalls))
	}
	if st.QueuedBytes != 0 {
		out = append(out, fmt.Sprintf("QueuedBytes=%d", st.QueuedBytes))
	}
	if st.DoubleReleases != 0 {
		out = append(out, fmt.Sprintf("DoubleReleases=%d", st.DoubleReleases))
	}
	for _, sc := range st.Scopes {
		if sc.InUse != 0 && !strings.HasSuffix(sc.Name, "/"+spi.ClassRate.String()) {
			out = append(out, fmt.Sprintf("%s InUse=%d", sc.Name, sc.InUse))
		}
		if sc.Waiters != 0 {
			out = append(out, fmt.Sprintf("%s Waiters=%d", sc.Name, sc.Waiters))
		}
	}
	if drained && st.LivePrograms != 0 {
		out = append(out, fmt.Sprintf("LivePrograms=%d", st.LivePrograms))
	}
	return out
}

// report prints the summary below the table, ending with the invariants
// line.
func (d *demo) report(res demoResult, chartErr error) {
	var reasons []string
	for i := range d.errs.refusals {
		if n := d.errs.refusals[i].Load(); n > 0 {
			reasons = append(reasons, fmt.Sprintf("%s=%d", kernel.Reason(i), n))
		}
	}
	if len(reasons) == 0 {
		reasons = append(reasons, "none")
	}
	d.tl.printf("")
	d.tl.printf("admitted=%d rejected=%d (%s) bypassed=%d", d.admitted.Load(), d.rejected(), strings.Join(reasons, " "), d.bypassed.Load())
	d.tl.printf("peak holders: global=%d %s=%d", d.obs.peak("global"), checkoutScope, d.obs.peak(checkoutScope))
	d.tl.printf("rate check: %d grants under the Global token bucket; %s", res.RateGrants, res.RateDetail)
	for _, ex := range res.OverExamples {
		d.tl.printf("over-admission: %s", ex)
	}
	for _, p := range res.CounterProblems {
		d.tl.printf("not zero: %s", p)
	}
	if res.UnexpectedErrors > 0 {
		d.tl.printf("unexpected errors: %d (calls that ended with neither an answer nor a refusal the scenario expects)", res.UnexpectedErrors)
	}
	for _, ex := range res.UnexpectedExamples {
		d.tl.printf("unexpected error: %s", ex)
	}
	switch {
	case chartErr != nil:
		d.tl.printf("chart not written: %v", chartErr)
	case d.opts.SVG != "":
		d.tl.printf("chart: %s (%d samples, %d updates marked)", d.opts.SVG, res.ChartSamples, len(res.Updates))
	}
	d.tl.printf("%s", res.InvariantsLine())
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
