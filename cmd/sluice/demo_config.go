package main

import (
	"fmt"
	"strings"

	"github.com/sluicerpc/sluice/config"
	"github.com/sluicerpc/sluice/kernel"
)

// demoDoc is one configuration of the scenario, applied as a
// configuration document through the admin API.
type demoDoc struct {
	Global   int64              // the Global concurrency limit
	Queue    kernel.QueuePolicy // the queue policy (all bounds positive)
	Checkout int64              // the concurrency limit of shop/Checkout; 0: no method rule
	Rate     *bucket            // the Global token bucket; nil: none
}

// YAML is the document: version 1, server.admission only (every other
// server setting at its default, as the demo's server was built).
func (c demoDoc) YAML() []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "version: 1\nserver:\n  admission:\n    global:\n      limits:\n        - kind: concurrency\n          limit: %d\n", c.Global)
	if r := c.Rate; r != nil {
		fmt.Fprintf(&b, "        - kind: token_bucket\n          token_limit: %d\n          tokens_per_period: %d\n          period: 1s\n          continuous: true\n", r.TokenLimit, r.PerSecond)
	}
	if c.Checkout > 0 {
		fmt.Fprintf(&b, "    methods:\n      %s:\n        limits:\n          - kind: concurrency\n            limit: %d\n", checkoutMethod, c.Checkout)
	}
	fmt.Fprintf(&b, "    queue:\n      max_queued_calls: %d\n      max_queued_bytes: %d\n      max_queue_delay: %s\n", c.Queue.MaxQueuedCalls, c.Queue.MaxQueuedBytes, c.Queue.MaxQueueDelay)
	return []byte(b.String())
}

// options converts the document as the server's Controller does (parse,
// then ServerSettings), so that the observer is told the program the
// server runs, not the demo's idea of it.
func (c demoDoc) options() (kernel.Options, error) {
	doc, err := config.Parse(c.YAML(), "demo")
	if err != nil {
		return kernel.Options{}, err
	}
	ss, err := doc.ServerSettings(nil)
	if err != nil {
		return kernel.Options{}, err
	}
	a := ss.Settings().Admission
	if a == nil {
		return kernel.Options{}, fmt.Errorf("the demo's document has no admission program:\n%s", c.YAML())
	}
	return *a, nil
}
