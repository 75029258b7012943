package control_test

import (
	"context"
	"os"
	"regexp"
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

// TestTheMetricsTableListsTheControllersInstruments (issue 25 section 4):
// docs/observability.md lists the instruments the Controller creates, and
// no other sluice.config name.
func TestTheMetricsTableListsTheControllersInstruments(t *testing.T) {
	var created []string
	mp := sdkmetric.NewMeterProvider(
		sdkmetric.WithReader(sdkmetric.NewManualReader()),
		sdkmetric.WithView(func(i sdkmetric.Instrument) (sdkmetric.Stream, bool) {
			created = append(created, i.Name) // at New, on this goroutine
			return sdkmetric.Stream{}, false
		}))
	defer func() { _ = mp.Shutdown(context.Background()) }()
	control.New(newServer(t), control.Options{MeterProvider: mp}).Close()

	b, err := os.ReadFile("../docs/observability.md")
	require.NoError(t, err)
	documented := regexp.MustCompile("(?m)^\\| `(sluice\\.config\\.[a-z_.]+)`").FindAllStringSubmatch(string(b), -1)
	var names []string
	for _, m := range documented {
		names = append(names, m[1])
	}
	require.NotEmpty(t, created)
	require.ElementsMatch(t, created, names)
}
