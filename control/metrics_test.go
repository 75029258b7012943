package control_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/sluicerpc/sluice/control"
)

// reloads collects sluice.config.reloads by "source/outcome".
func reloads(t *testing.T, r *sdkmetric.ManualReader) map[string]int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, r.Collect(context.Background(), &rm))
	got := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != "sluice.config.reloads" {
				continue
			}
			for _, p := range m.Data.(metricdata.Sum[int64]).DataPoints {
				src, _ := p.Attributes.Value("source")
				out, _ := p.Attributes.Value("outcome")
				if p.Value != 0 {
					got[src.AsString()+"/"+out.AsString()] = p.Value
				}
			}
		}
	}
	return got
}

// TestMetricsCountReloadsBySourceAndOutcome: sluice.config.reloads reports
// each source's changes by outcome, and nothing after Close.
func TestMetricsCountReloadsBySourceAndOutcome(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer func() { _ = mp.Shutdown(context.Background()) }()
	c := control.New(newServer(t), control.Options{MeterProvider: mp})
	_, err := c.Apply(latest(docConcurrency2))
	require.NoError(t, err)
	_, err = c.Apply(latest("# a comment changes nothing\n" + docConcurrency2))
	require.NoError(t, err)
	bad := latest("version: 1\nserver: [\n")
	bad.Source = control.SourceAdmin
	_, err = c.Apply(bad)
	require.Error(t, err)

	assert.Equal(t, map[string]int64{"file/applied": 1, "file/unchanged": 1, "admin/rejected": 1}, reloads(t, reader))
	c.Close()
	c.Close()
	assert.Empty(t, reloads(t, reader), "Close unregisters the observation")
}
