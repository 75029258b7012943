package main

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/sluicerpc/sluice/kernel"
	"github.com/sluicerpc/sluice/protocol/status"
)

// errorCheck sorts the errors of the demo's workers into the refusals the
// scenario expects, counted by reason, and every other error, which fails
// the demo.
//
// Expected are the admission refusals the published programs can make:
// concurrency, queue_full and queue_timeout once the first program was
// enabled (step 2), and rate once the first Global token bucket was
// published (step 9a). The flags are set before the publication, and a
// refusal by a program reaches its worker after the program was
// published, so no expected refusal is ever counted as unexpected however
// the goroutines are scheduled. Everything else is unexpected: a refusal
// before any program could make it, a reason no program of the demo
// configures (partition_capacity, call_capacity, unavailable, draining), a
// lost connection, a protocol violation, Internal, Unknown, a deadline or
// cancellation while the workers were still running.
type errorCheck struct {
	admission atomic.Bool // a program has been published by Enable
	rate      atomic.Bool // a program with a Global token bucket has been published
	step      atomic.Pointer[string]

	refusals [kernel.ReasonPartitionCapacity + 1]atomic.Uint64 // expected, by reason

	unexpected atomic.Int64
	mu         sync.Mutex
	examples   []string // the first maxExamples unexpected errors
}

// stepStarts records the step in force, for the description of an
// unexpected error.
func (c *errorCheck) stepStarts(name string) { c.step.Store(&name) }

// add sorts the error a worker's call of method ended with.
func (c *errorCheck) add(method string, err error) {
	if r, ok := c.expectedReason(err); ok {
		c.refusals[r].Add(1)
		return
	}
	c.unexpected.Add(1)
	step := "before step 1"
	if p := c.step.Load(); p != nil {
		step = "in step " + fmt.Sprintf("%q", *p)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.examples) < maxExamples {
		c.examples = append(c.examples, fmt.Sprintf("%s %s: %v", method, step, err))
	}
}

// expectedReason returns the kernel reason of err when it is a refusal
// the demo expects at this point of the scenario.
func (c *errorCheck) expectedReason(err error) (kernel.Reason, bool) {
	e, ok := status.FromError(err)
	if !ok || e.Reason == "" {
		return 0, false
	}
	switch e.Reason {
	case kernel.ReasonConcurrency.String():
		return kernel.ReasonConcurrency, c.admission.Load()
	case kernel.ReasonQueueFull.String():
		return kernel.ReasonQueueFull, c.admission.Load()
	case kernel.ReasonQueueTimeout.String():
		return kernel.ReasonQueueTimeout, c.admission.Load()
	case kernel.ReasonRate.String():
		return kernel.ReasonRate, c.rate.Load()
	}
	return 0, false
}

// rejected is the number of expected refusals.
func (c *errorCheck) rejected() uint64 {
	var n uint64
	for i := range c.refusals {
		n += c.refusals[i].Load()
	}
	return n
}

// unexpectedErrors returns the number of unexpected errors and the first
// few of them.
func (c *errorCheck) unexpectedErrors() (int64, []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.unexpected.Load(), append([]string(nil), c.examples...)
}
