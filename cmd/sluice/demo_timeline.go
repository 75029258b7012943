package main

import (
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"
)

// timeline prints the demo's table: one row per scenario step and periodic
// sample rows in between. Rows from the scenario and the sampler may be
// printed concurrently; each row is written whole.
type timeline struct {
	mu    sync.Mutex
	w     io.Writer
	start time.Time
	err   error // first write error; later rows are dropped
}

// timelineRow is one line of the table.
type timelineRow struct {
	at       time.Time
	gen      uint64
	step     string // empty for a sample row
	limit    int64  // effective Global limit; < 0 when disabled
	active   int64  // permits held, counted by the demo
	queued   int    // kernel QueuedCalls
	admitted uint64 // cumulative grants
	rejected uint64 // cumulative refusals
	bypassed uint64 // cumulative requests that ran while disabled
	note     string
}

const (
	rowFormat  = "%8s %4s  %-26s %5s %6s %6s %8s %8s %8s  %s"
	sampleStep = "  ·"
)

func newTimeline(w io.Writer, start time.Time) *timeline {
	return &timeline{w: w, start: start}
}

// header prints the column names.
func (t *timeline) header() {
	t.line(fmt.Sprintf(rowFormat, "elapsed", "gen", "step", "limit", "active", "queued", "admitted", "rejected", "bypassed", "note"))
}

// row prints r.
func (t *timeline) row(r timelineRow) {
	step := r.step
	if step == "" {
		step = sampleStep
	}
	limit := "-"
	if r.limit >= 0 {
		limit = strconv.FormatInt(r.limit, 10)
	}
	t.line(fmt.Sprintf(rowFormat,
		fmt.Sprintf("%.3fs", r.at.Sub(t.start).Seconds()),
		strconv.FormatUint(r.gen, 10),
		step, limit,
		strconv.FormatInt(r.active, 10),
		strconv.Itoa(r.queued),
		strconv.FormatUint(r.admitted, 10),
		strconv.FormatUint(r.rejected, 10),
		strconv.FormatUint(r.bypassed, 10),
		r.note))
}

// printf prints a free-form line (summaries below the table).
func (t *timeline) printf(format string, args ...any) {
	t.line(fmt.Sprintf(format, args...))
}

func (t *timeline) line(s string) { t.lines([]string{s}) }

// lines prints ls together: no row of another goroutine comes between
// them.
func (t *timeline) lines(ls []string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, s := range ls {
		if t.err != nil {
			return
		}
		// Trailing spaces come from an empty note column.
		for len(s) > 0 && s[len(s)-1] == ' ' {
			s = s[:len(s)-1]
		}
		_, t.err = io.WriteString(t.w, s+"\n")
	}
}

// Err returns the first write error.
func (t *timeline) Err() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.err
}
