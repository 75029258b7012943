package main

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"sync"
	"time"

	"github.com/sluicerpc/sluice/cmd/sluice/internal/chart"
)

// chartSample is one sample of the chart: what was in force and what the
// demo counted at one instant.
type chartSample struct {
	at       time.Time
	limit    int64  // the Global concurrency limit in force; < 0 while disabled
	active   int64  // permits held (the observer's Global holders)
	queued   int    // kernel QueuedCalls
	admitted uint64 // cumulative grants and requests that ran while disabled
	bucket   int64  // the Global token bucket's rate in force, per second; 0: none
}

// demoUpdate is one change the scenario applied through the admin API.
type demoUpdate struct {
	Step       string
	Generation uint64
	Enabled    bool      // admission is enabled after it
	At         time.Time // when its answer arrived
}

// chartRecorder keeps the samples and the updates of a run. Safe for
// concurrent use; it allocates as it grows (a sample every chartEvery).
type chartRecorder struct {
	mu      sync.Mutex
	samples []chartSample
	updates []demoUpdate
}

func (r *chartRecorder) sample(s chartSample) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.samples = append(r.samples, s)
}

func (r *chartRecorder) update(u demoUpdate) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.updates = append(r.updates, u)
}

func (r *chartRecorder) snapshot() ([]chartSample, []demoUpdate) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]chartSample(nil), r.samples...), append([]demoUpdate(nil), r.updates...)
}

// record samples the chart every chartEvery, from now until ctx ends.
func (d *demo) record(ctx context.Context) {
	d.chart.sample(d.chartSample())
	t := time.NewTicker(d.opts.chartEvery())
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			d.chart.sample(d.chartSample())
		}
	}
}

func (d *demo) chartSample() chartSample {
	r := d.snapshot(d.k.Stats(), "", "")
	return chartSample{at: r.at, limit: r.limit, active: r.active, queued: r.queued, admitted: r.admitted + r.bypassed, bucket: d.bucketInForce.Load()}
}

// buildChart builds the chart of the run: the Global limit in force,
// active permits and queued requests (left axis), the admitted rate over
// each sample interval (requests granted, and while admission is disabled
// the requests that bypass it) and the token bucket's rate (right axis), a
// marker per update labelled with its step and generation, and the
// intervals with admission disabled shaded (from the updates' answers).
func (d *demo) buildChart(res demoResult) *chart.Chart {
	samples, updates := d.chart.snapshot()
	start := d.tl.start
	secs := func(t time.Time) float64 { return t.Sub(start).Seconds() }
	nan := math.NaN()
	c := &chart.Chart{
		Title: "sluice demo: live admission updates through the admin API",
		Subtitle: []string{
			fmt.Sprintf("service %s (Browse, Checkout), %d client workers, seed %d, step %s, rate step %s; a sample every %s",
				demoService, d.opts.Workers, d.opts.Seed, d.opts.Step, d.opts.RateStep, d.opts.chartEvery()),
			"every update is a configuration document: PUT /v1/config with If-Match the generation in force; disable: DELETE /v1/config/admission",
		},
		Footer: []string{
			fmt.Sprintf("admitted=%d rejected=%d bypassed=%d", d.admitted.Load(), d.rejected(), d.bypassed.Load()),
			res.InvariantsLine(),
		},
		XLabel:    "time since start (s)",
		Left:      "permits, requests (count)",
		Right:     "requests per second",
		BandLabel: "admission disabled",
	}
	limit, active, queued, rate, bkt := make([]float64, len(samples)), make([]float64, len(samples)), make([]float64, len(samples)), make([]float64, len(samples)), make([]float64, len(samples))
	for i, s := range samples {
		x := secs(s.at)
		c.X = append(c.X, x)
		limit[i], active[i], queued[i], bkt[i] = float64(s.limit), float64(s.active), float64(s.queued), float64(s.bucket)
		if s.limit < 0 {
			limit[i] = nan
		}
		if s.bucket <= 0 {
			bkt[i] = nan
		}
		if i > 0 {
			if dt := s.at.Sub(samples[i-1].at).Seconds(); dt > 0 {
				rate[i] = float64(s.admitted-samples[i-1].admitted) / dt
			}
		}
	}
	c.Series = []chart.Series{
		{ID: "limit", Name: "Global limit in force", Color: "#d62728", Values: limit},
		{ID: "active", Name: "active permits", Color: "#1f77b4", Values: active},
		{ID: "queued", Name: "queued requests", Color: "#ff7f0e", Values: queued},
		{ID: "admitted", Name: "admitted per second (disabled: bypassing)", Color: "#2ca02c", Right: true, Values: rate},
		{ID: "bucket", Name: "token bucket rate", Color: "#17becf", Right: true, Dashed: true, Values: bkt},
	}
	if len(c.X) == 0 {
		return c
	}
	first, last := c.X[0], c.X[len(c.X)-1]
	disabled, from := true, first // the demo's server starts disabled
	for _, u := range updates {
		// An update answered after the last sample is drawn at its edge
		// (the chart spans the samples).
		x := min(max(secs(u.At), first), last)
		c.Markers = append(c.Markers, chart.Marker{X: x, Label: fmt.Sprintf("%s · gen %d", u.Step, u.Generation)})
		switch {
		case disabled && u.Enabled:
			c.Bands = append(c.Bands, chart.Band{From: from, To: x})
			disabled = false
		case !disabled && !u.Enabled:
			disabled, from = true, x
		}
	}
	if disabled {
		c.Bands = append(c.Bands, chart.Band{From: from, To: last})
	}
	return c
}

// writeChart writes the chart of the run to opts.SVG (nothing when it is
// empty); it returns the number of samples drawn.
func (d *demo) writeChart(res demoResult) (int, error) {
	if d.opts.SVG == "" {
		return 0, nil
	}
	c := d.buildChart(res)
	var b bytes.Buffer
	if err := c.WriteSVG(&b); err != nil {
		return 0, fmt.Errorf("chart %s: %w", d.opts.SVG, err)
	}
	if err := os.WriteFile(d.opts.SVG, b.Bytes(), 0o644); err != nil {
		return 0, fmt.Errorf("chart: %w", err)
	}
	return len(c.X), nil
}
