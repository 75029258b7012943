package client_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// metricsReader is an SDK MeterProvider with a ManualReader: a test
// collects when it wants to look, and nothing is exported in between.
type metricsReader struct {
	t      testing.TB
	mp     *sdkmetric.MeterProvider
	reader *sdkmetric.ManualReader
	rm     metricdata.ResourceMetrics
}

func newMetricsReader(t testing.TB) *metricsReader {
	r := &metricsReader{t: t, reader: sdkmetric.NewManualReader()}
	r.mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(r.reader))
	t.Cleanup(func() { _ = r.mp.Shutdown(context.Background()) })
	return r
}

func (r *metricsReader) collect() {
	r.t.Helper()
	r.rm = metricdata.ResourceMetrics{}
	require.NoError(r.t, r.reader.Collect(context.Background(), &r.rm))
}

func (r *metricsReader) metric(name string) (metricdata.Metrics, bool) {
	for _, sm := range r.rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == name {
				return m, true
			}
		}
	}
	return metricdata.Metrics{}, false
}

// has reports whether set holds every key=value of kv (pairs).
func has(set attribute.Set, kv ...string) bool {
	for i := 0; i < len(kv); i += 2 {
		v, ok := set.Value(attribute.Key(kv[i]))
		if !ok || v.AsString() != kv[i+1] {
			return false
		}
	}
	return true
}

// value is the sum of the points of the counter or gauge name whose
// attributes hold kv; the metric must exist.
func (r *metricsReader) value(name string, kv ...string) int64 {
	r.t.Helper()
	m, ok := r.metric(name)
	require.True(r.t, ok, "no metric %s", name)
	var n int64
	switch d := m.Data.(type) {
	case metricdata.Sum[int64]:
		for _, p := range d.DataPoints {
			if has(p.Attributes, kv...) {
				n += p.Value
			}
		}
	case metricdata.Gauge[int64]:
		for _, p := range d.DataPoints {
			if has(p.Attributes, kv...) {
				n += p.Value
			}
		}
	default:
		r.t.Fatalf("%s: unexpected data %T", name, m.Data)
	}
	return n
}

// points is the number of data points of the counter or gauge name (0
// when it is absent).
func (r *metricsReader) points(name string) int {
	m, ok := r.metric(name)
	if !ok {
		return 0
	}
	switch d := m.Data.(type) {
	case metricdata.Sum[int64]:
		return len(d.DataPoints)
	case metricdata.Gauge[int64]:
		return len(d.DataPoints)
	}
	r.t.Fatalf("%s: unexpected data %T", name, m.Data)
	return 0
}

// hist is the count and sum of the measurements of the histogram name
// whose attributes hold kv.
func (r *metricsReader) hist(name string, kv ...string) (count uint64, sum float64) {
	r.t.Helper()
	m, ok := r.metric(name)
	if !ok {
		return 0, 0
	}
	switch d := m.Data.(type) {
	case metricdata.Histogram[float64]:
		for _, p := range d.DataPoints {
			if has(p.Attributes, kv...) {
				count, sum = count+p.Count, sum+p.Sum
			}
		}
	case metricdata.Histogram[int64]:
		for _, p := range d.DataPoints {
			if has(p.Attributes, kv...) {
				count, sum = count+p.Count, sum+float64(p.Sum)
			}
		}
	default:
		r.t.Fatalf("%s: unexpected data %T", name, m.Data)
	}
	return count, sum
}

// count is the number of measurements of the histogram name whose
// attributes hold kv.
func (r *metricsReader) count(name string, kv ...string) uint64 {
	r.t.Helper()
	n, _ := r.hist(name, kv...)
	return n
}

// callAttrs are the attributes of a call of method that returned code
// (with error.type for every code but OK).
func callAttrs(method, code string) []string {
	kv := []string{"rpc.system.name", "sluice", "rpc.method", method, "rpc.response.status_code", code}
	if code != "OK" {
		kv = append(kv, "error.type", code)
	}
	return kv
}
