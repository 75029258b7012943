package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"time"

	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/protocol/status"
)

// callOutcome is what one call of "sluice call" ended with.
type callOutcome uint8

const (
	// callSucceeded: the call returned its answer (a one-way call: it was
	// sent).
	callSucceeded callOutcome = iota
	// callRefused: the call was answered without running, with a reason
	// (the server's admission, call capacity or drain, or the client's
	// endpoint policy): status.Error.Reason is set.
	callRefused
	// callCanceled: the command was interrupted while the call was in
	// flight (context.Canceled, or the server's Canceled answer to it).
	callCanceled
	// callFailed: everything else (the deadline of -timeout, a lost
	// connection, a handler's error, Unimplemented, ...).
	callFailed
)

// classify sorts a call's error into its outcome; key is the refusal's
// reason, or the failure's code.
func classify(err error) (outcome callOutcome, key string) {
	if err == nil {
		return callSucceeded, ""
	}
	if e, ok := status.FromError(err); ok && e.Reason != "" {
		return callRefused, e.Reason
	}
	code := status.Code(err)
	if errors.Is(err, context.Canceled) || code == protocol.CodeCanceled {
		return callCanceled, ""
	}
	return callFailed, code.String()
}

// summary is what a load of calls ended with.
type summary struct {
	requested int // -n
	succeeded int
	refused   map[string]int // by reason
	canceled  int
	failed    map[string]int    // by code
	example   map[string]string // the first error of each failure code
	lat       []time.Duration   // of the successes
	elapsed   time.Duration
	messages  *streamMessages // the streams' messages, of every outcome; nil for unary calls
}

// streamMessages counts the messages of a load of streams.
type streamMessages struct{ sent, received int }

func newSummary(requested int) summary {
	return summary{requested: requested, refused: map[string]int{}, failed: map[string]int{}, example: map[string]string{}}
}

// add counts one call that ended with err after d.
func (s *summary) add(err error, d time.Duration) {
	switch outcome, key := classify(err); outcome {
	case callSucceeded:
		s.succeeded++
		s.lat = append(s.lat, d)
	case callRefused:
		s.refused[key]++
	case callCanceled:
		s.canceled++
	default:
		if s.failed[key] == 0 {
			s.example[key] = err.Error()
		}
		s.failed[key]++
	}
}

func (s summary) refusedTotal() int { return total(s.refused) }
func (s summary) failedTotal() int  { return total(s.failed) }

// ended is the number of calls that were made (the others were not
// started: the command was interrupted).
func (s summary) ended() int { return s.succeeded + s.refusedTotal() + s.canceled + s.failedTotal() }

// ok reports whether every requested call succeeded.
func (s summary) ok() bool { return s.succeeded == s.requested }

// report prints the summary and returns the command's exit status: 0
// when every requested call succeeded, else 1 (a call was refused,
// canceled, failed or not made).
func (s summary) report(w io.Writer) int {
	s.print(w)
	if !s.ok() {
		return exitFail
	}
	return exitOK
}

// print writes the summary: the counts by outcome and the throughput of
// the successes, for streams the messages sent and received, the latency
// of the successes, then a line per refusal reason and per failure code
// (with the first error of that code).
func (s summary) print(w io.Writer) {
	rate := 0.0
	if secs := s.elapsed.Seconds(); secs > 0 {
		rate = float64(s.succeeded) / secs
	}
	fmt.Fprintf(w, "calls: %d in %v: %d succeeded (%.0f/s), %d refused, %d canceled, %d failed\n",
		s.ended(), s.elapsed.Round(time.Millisecond), s.succeeded, rate, s.refusedTotal(), s.canceled, s.failedTotal())
	if s.messages != nil {
		fmt.Fprintf(w, "stream messages: %d sent, %d received\n", s.messages.sent, s.messages.received)
	}
	if n := s.requested - s.ended(); n > 0 {
		fmt.Fprintf(w, "not started: %d (interrupted)\n", n)
	}
	if len(s.lat) > 0 {
		lat := slices.Clone(s.lat)
		slices.Sort(lat)
		fmt.Fprintf(w, "latency of the successes: p50 %v, p99 %v, max %v\n", lat[len(lat)/2], lat[len(lat)*99/100], lat[len(lat)-1])
	}
	for _, k := range sortedKeys(s.refused) {
		fmt.Fprintf(w, "refused (%s): %d\n", k, s.refused[k])
	}
	for _, k := range sortedKeys(s.failed) {
		fmt.Fprintf(w, "failed (%s): %d, the first: %s\n", k, s.failed[k], s.example[k])
	}
}

func total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
