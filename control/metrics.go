package control

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

const meterName = "github.com/sluicerpc/sluice/control"

// registerMetrics creates the Controller's observable instrument on mp's
// meter: sluice.config.reloads, the changes of each source by outcome,
// read from Status at collection time (nothing is recorded on the change
// path).
func (c *Controller) registerMetrics(mp metric.MeterProvider) (metric.Registration, error) {
	meter := mp.Meter(meterName)
	reloads, err := meter.Int64ObservableCounter("sluice.config.reloads", metric.WithUnit("{change}"),
		metric.WithDescription("Configuration changes by source and outcome (applied, unchanged, rejected, retried)."))
	if err != nil {
		return nil, err
	}
	return meter.RegisterCallback(func(_ context.Context, ob metric.Observer) error {
		for src, n := range c.Status().Counts {
			for _, o := range [...]struct {
				outcome string
				n       uint64
			}{{"applied", n.Applied}, {"unchanged", n.Unchanged}, {"rejected", n.Rejected}, {"retried", n.Retried}} {
				ob.ObserveInt64(reloads, int64(min(o.n, 1<<63-1)), metric.WithAttributes(
					attribute.String("source", string(src)), attribute.String("outcome", o.outcome)))
			}
		}
		return nil
	}, reloads)
}

// Close unregisters the Controller's metrics (Options.MeterProvider);
// the Controller stays usable. Close may be called more than once.
func (c *Controller) Close() {
	c.mu.Lock()
	reg := c.reg
	c.reg = nil
	c.mu.Unlock()
	if reg != nil {
		_ = reg.Unregister()
	}
}
