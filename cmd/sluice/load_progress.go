package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// isTerminal reports whether w is a terminal (a character device): the
// progress line is then rewritten in place.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// startProgress starts the progress line, every -progress on
// o.progressOutput, and returns the function that stops it (and ends a
// line rewritten in place with a newline). On a terminal the line is
// rewritten with \r; elsewhere (a file, a pipe) each is a plain line.
// Each line reads the last interval: the calls that ended in it and their
// rate, the p50 and p99 of its successes, and its refusals by reason.
func (r *loadRun) startProgress() (stop func()) {
	w := r.o.progressOutput
	if r.o.Progress <= 0 || w == nil {
		return func() {}
	}
	tty := isTerminal(w)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(r.o.Progress)
		defer t.Stop()
		var prev progressCounts
		var win latencyHist
		last := r.start
		for {
			select {
			case <-done:
				if tty {
					fmt.Fprint(w, "\n")
				}
				return
			case now := <-t.C:
				win.reset()
				r.live.drainInto(&win)
				cur := r.counts()
				line := r.progressLine(now.Sub(r.start), now.Sub(last), prev, cur, &win)
				win.drainInto(&r.total)
				prev, last = cur, now
				if tty {
					fmt.Fprint(w, "\r"+line+"\x1b[K")
				} else {
					fmt.Fprint(w, line+"\n")
				}
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
	}
}

// progressCounts are the cumulative counts a progress line takes the
// difference of.
type progressCounts struct {
	ok, failed, missed int64
	refused            map[string]int64
}

func (r *loadRun) counts() progressCounts {
	return progressCounts{ok: r.ok.Load(), failed: r.failures(), missed: r.missed.Load(), refused: r.refusalsByReason()}
}

// progressLine is one line, for example
//
//	[3s] 1002 calls (334/s): 980 ok p50 1.2ms p99 4.1ms; refused 22 (concurrency 20, queue_full 2); 0 failed; 12 in flight
func (r *loadRun) progressLine(at, interval time.Duration, prev, cur progressCounts, win *latencyHist) string {
	var refused int64
	var reasons []string
	for _, k := range sortedKeys(cur.refused) {
		if d := cur.refused[k] - prev.refused[k]; d > 0 {
			refused += d
			reasons = append(reasons, fmt.Sprintf("%s %d", k, d))
		}
	}
	ok, failed := cur.ok-prev.ok, cur.failed-prev.failed
	ended := ok + failed + refused
	rate := 0.0
	if s := interval.Seconds(); s > 0 {
		rate = float64(ended) / s
	}
	var b strings.Builder
	fmt.Fprintf(&b, "[%v] %d calls (%.0f/s): %d ok", at.Round(time.Second/10), ended, rate, ok)
	if ok > 0 {
		fmt.Fprintf(&b, " p50 %v p99 %v", roundDuration(win.quantile(0.50)), roundDuration(win.quantile(0.99)))
	}
	fmt.Fprintf(&b, "; refused %d", refused)
	if len(reasons) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(reasons, ", "))
	}
	fmt.Fprintf(&b, "; %d failed", failed)
	if r.o.Rate > 0 {
		fmt.Fprintf(&b, "; %d missed", cur.missed-prev.missed)
	}
	fmt.Fprintf(&b, "; %d in flight", r.inflight.Load())
	return b.String()
}

// roundDuration keeps 3 significant digits.
func roundDuration(d time.Duration) time.Duration {
	for unit := time.Duration(1); unit < time.Hour; unit *= 10 {
		if d < 1000*unit {
			return d.Round(unit)
		}
	}
	return d.Round(time.Second)
}
