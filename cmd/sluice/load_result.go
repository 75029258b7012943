package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// loadResult is what a run of "sluice load" ended with; -json prints it
// as one object, whose schema is the field tags and comments below. Every started call is counted in exactly one of Statuses
// (OK included); Started + Missed = Due.
type loadResult struct {
	Mode        string  `json:"mode"`                   // "rate" (open loop) or "concurrency" (closed loop)
	Rate        float64 `json:"rate,omitempty"`         // -rate, calls per second
	Concurrency int     `json:"concurrency,omitempty"`  // -c
	MaxInflight int     `json:"max_inflight,omitempty"` // -max-inflight (rate mode)
	Seed        uint64  `json:"seed"`
	ElapsedNS   int64   `json:"elapsed_ns"` // from the first call's start to the last call's end

	Due        int64   `json:"due"`        // calls the schedule made due (closed loop: started)
	Started    int64   `json:"started"`    // calls made
	Missed     int64   `json:"missed"`     // due but not started: max_inflight calls were in flight
	Late       int64   `json:"late"`       // started more than one interval (at least 1ms) after their due time
	OK         int64   `json:"ok"`         // calls that succeeded
	Refused    int64   `json:"refused"`    // calls refused with a reason (the sum of Refusals)
	Failed     int64   `json:"failed"`     // calls that failed without a reason
	Throughput float64 `json:"throughput"` // successes per second of ElapsedNS

	Latency   latencySummary   `json:"latency"`   // of the successes
	Histogram []histBucketJSON `json:"histogram"` // of the successes, power-of-two ranges
	Statuses  []statusRow      `json:"statuses"`  // by code, then reason
	Refusals  map[string]int64 `json:"refusals"`  // by reason
	Methods   []methodRow      `json:"methods"`   // in -method order
}

// latencySummary is in nanoseconds; all zero when no call succeeded.
type latencySummary struct {
	Count uint64 `json:"count"`
	Min   int64  `json:"min_ns"`
	Mean  int64  `json:"mean_ns"`
	P50   int64  `json:"p50_ns"`
	P90   int64  `json:"p90_ns"`
	P99   int64  `json:"p99_ns"`
	P999  int64  `json:"p999_ns"`
	Max   int64  `json:"max_ns"`
}

// histBucketJSON counts the successes that took at most LE nanoseconds
// (and more than the previous bucket's LE).
type histBucketJSON struct {
	LE    int64  `json:"le_ns"`
	Count uint64 `json:"count"`
}

// statusRow is one row of the status table. Reason is the refusal's
// reason ("concurrency", "queue_full", "call_capacity", ...), empty for
// OK and for failures; First the first error's message.
type statusRow struct {
	Code   string `json:"code"`
	Reason string `json:"reason,omitempty"`
	Count  int64  `json:"count"`
	First  string `json:"first_error,omitempty"`
}

// methodRow is one method of the mix and the calls made to it.
type methodRow struct {
	Method string `json:"method"`
	Weight int    `json:"weight"`
	Calls  int64  `json:"calls"`
}

// result gathers the run's results once every call ended.
func (r *loadRun) result(elapsed time.Duration) loadResult {
	res := loadResult{
		Mode: "concurrency", Concurrency: r.o.Concurrency, Seed: r.o.Seed, ElapsedNS: int64(elapsed),
		Due: r.due.Load(), Started: r.started.Load(), Missed: r.missed.Load(), Late: r.late.Load(),
		OK: r.ok.Load(), Refusals: r.refusalsByReason(), Failed: r.failures(),
	}
	if r.o.Rate > 0 {
		res.Mode, res.Rate, res.Concurrency, res.MaxInflight = "rate", r.o.Rate, 0, r.o.MaxInflight
	}
	for _, n := range res.Refusals {
		res.Refused += n
	}
	if s := elapsed.Seconds(); s > 0 {
		res.Throughput = float64(res.OK) / s
	}
	h := &r.total
	if n := h.count(); n > 0 {
		res.Latency = latencySummary{
			Count: n, Min: int64(h.minimum()), Mean: int64(h.mean()), Max: int64(h.maximum()),
			P50: int64(h.quantile(0.50)), P90: int64(h.quantile(0.90)), P99: int64(h.quantile(0.99)), P999: int64(h.quantile(0.999)),
		}
	}
	res.Histogram = []histBucketJSON{}
	for _, b := range h.powerBars() {
		res.Histogram = append(res.Histogram, histBucketJSON{LE: int64(b.Upper), Count: b.Count})
	}
	res.Statuses = []statusRow{}
	if res.OK > 0 {
		res.Statuses = append(res.Statuses, statusRow{Code: "OK", Count: res.OK})
	}
	r.mu.Lock()
	for k, row := range r.rows {
		res.Statuses = append(res.Statuses, statusRow{Code: k.code, Reason: k.reason, Count: row.n, First: row.first})
	}
	r.mu.Unlock()
	slices.SortFunc(res.Statuses[min(len(res.Statuses), boolInt(res.OK > 0)):], func(a, b statusRow) int {
		return cmp.Or(cmp.Compare(a.Code, b.Code), cmp.Compare(a.Reason, b.Reason))
	})
	for i := range r.methods {
		m := &r.methods[i]
		res.Methods = append(res.Methods, methodRow{Method: m.Name, Weight: m.Weight, Calls: m.calls.Load()})
	}
	return res
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// writeJSON prints res as one JSON object and a newline.
func (res loadResult) writeJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(res)
}

// histBarWidth is the width of the longest bar of the text histogram.
const histBarWidth = 40

// print writes the text report: the totals, the latency of the successes
// and their histogram (power-of-two ranges, bars scaled to the largest),
// the status table and the method mix.
func (res loadResult) print(w io.Writer) {
	elapsed := time.Duration(res.ElapsedNS)
	drive := fmt.Sprintf("%d callers", res.Concurrency)
	if res.Mode == "rate" {
		drive = fmt.Sprintf("rate %v/s, max %d in flight", res.Rate, res.MaxInflight)
	}
	fmt.Fprintf(w, "load: %d calls in %v (%s): %d ok (%.0f/s), %d refused, %d failed\n",
		res.Started, elapsed.Round(time.Millisecond), drive, res.OK, res.Throughput, res.Refused, res.Failed)
	if res.Mode == "rate" {
		fmt.Fprintf(w, "schedule: %d due, %d started, %d missed (max-inflight reached), %d late\n", res.Due, res.Started, res.Missed, res.Late)
	}
	if l := res.Latency; l.Count > 0 {
		d := func(ns int64) time.Duration { return roundDuration(time.Duration(ns)) }
		fmt.Fprintf(w, "latency of the %d successes: min %v, mean %v, p50 %v, p90 %v, p99 %v, p99.9 %v, max %v\n",
			l.Count, d(l.Min), d(l.Mean), d(l.P50), d(l.P90), d(l.P99), d(l.P999), d(l.Max))
		var most uint64
		for _, b := range res.Histogram {
			most = max(most, b.Count)
		}
		for _, b := range res.Histogram {
			n := int((b.Count*histBarWidth + most - 1) / most)
			fmt.Fprintf(w, "  <= %-9v %-*s %d (%.1f%%)\n", roundDuration(time.Duration(b.LE+1)), histBarWidth, strings.Repeat("#", n), b.Count, 100*float64(b.Count)/float64(l.Count))
		}
	}
	fmt.Fprintf(w, "%-20s %-20s %10s %7s  %s\n", "status", "reason", "calls", "share", "first error")
	share := func(n int64) string {
		if res.Started == 0 {
			return "-"
		}
		return fmt.Sprintf("%.1f%%", 100*float64(n)/float64(res.Started))
	}
	for _, s := range res.Statuses {
		reason := s.Reason
		if reason == "" {
			reason = "-"
		}
		fmt.Fprintf(w, "%-20s %-20s %10d %7s  %s\n", s.Code, reason, s.Count, share(s.Count), s.First)
	}
	if res.Missed > 0 {
		fmt.Fprintf(w, "%-20s %-20s %10d %7s\n", "(not started)", "max_inflight", res.Missed, "")
	}
	var mix []string
	for _, m := range res.Methods {
		mix = append(mix, fmt.Sprintf("%s=%d: %d", m.Method, m.Weight, m.Calls))
	}
	fmt.Fprintf(w, "methods: %s\n", strings.Join(mix, ", "))
}
