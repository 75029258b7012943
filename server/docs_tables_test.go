package server

import (
	"context"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/sluicerpc/sluice/kernel"
	"github.com/sluicerpc/sluice/kernel/governor"
)

// The tables of refusal reasons in docs/ against the code (issue 25
// section 4): they fail when a reason is added, renamed or dropped on one
// side only.

// docTable returns the body rows of the first markdown table of path whose
// header row starts with the given cells, each row split into its trimmed
// cells.
func docTable(t *testing.T, path string, header ...string) [][]string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var rows [][]string
	in := false
	for line := range strings.Lines(string(b)) {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "|") {
			if in {
				break
			}
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		switch {
		case !in && len(cells) >= len(header) && slices.Equal(cells[:len(header)], header):
			in = true
		case in && strings.Trim(cells[0], "-: ") == "":
		case in:
			rows = append(rows, cells)
		}
	}
	require.NotEmpty(t, rows, "%s: no table headed %q", path, header)
	return rows
}

var wireReason = regexp.MustCompile("reason `([a-z_]+)`")

// TestTheRefusalsTableIsTheStatsKeys: docs/server.md lists every key of
// Stats().Refusals, in the code's order, each with the wire reason its
// Error frame carries, if any; a key that is sent as a reason is the
// reason itself.
func TestTheRefusalsTableIsTheStatsKeys(t *testing.T) {
	rows := docTable(t, "../docs/server.md", "Key", "Answer", "When")
	var keys []string
	for _, r := range rows {
		key := strings.Trim(r[0], "`")
		keys = append(keys, key)
		if m := wireReason.FindStringSubmatch(r[1]); m != nil {
			require.Equal(t, key, m[1], "a refusal counted as %q is sent with reason %q", key, m[1])
		} else {
			require.Contains(t, r[1], "no reason", "row %q says neither the reason nor that there is none", key)
		}
	}
	var want []string
	for d := range dropCanceled {
		want = append(want, d.String())
	}
	require.Equal(t, want, keys, "Stats().Refusals' keys")
}

// TestTheReasonsTableIsWhatTheServerSends: docs/protocol.md's Reasons
// table is exactly the reasons the server puts in Error frames: every
// kernel refusal reason, the call capacity's, the governor budgets', the
// draining one, and the refusals table's wire reasons.
func TestTheReasonsTableIsWhatTheServerSends(t *testing.T) {
	var documented []string
	for _, r := range docTable(t, "../docs/protocol.md", "Reason", "Code", "Sent when") {
		documented = append(documented, strings.Trim(r[0], "`"))
	}
	sent := []string{governor.CallCapacityReason, ReasonRetainedBytes, ReasonDecodedBytes, ReasonStreamBytes, reasonDraining}
	for r := kernel.ReasonNone + 1; r.String() != kernel.Reason(255).String(); r++ {
		sent = append(sent, r.String())
	}
	for _, r := range docTable(t, "../docs/server.md", "Key", "Answer", "When") {
		if m := wireReason.FindStringSubmatch(r[1]); m != nil && !slices.Contains(sent, m[1]) {
			sent = append(sent, m[1])
		}
	}
	require.ElementsMatch(t, sent, documented, "the reasons docs/protocol.md lists")
}

// TestTheMetricsTablesAreTheInstruments: docs/observability.md lists
// every instrument the server creates, and every name it lists under the
// server's prefixes is one the server creates.
func TestTheMetricsTablesAreTheInstruments(t *testing.T) {
	created := instrumentNames(t, func(mp metric.MeterProvider) {
		mux := NewMux()
		mux.HandleRaw("svc", "M", func(context.Context, []byte) ([]byte, error) { return nil, nil })
		srv, err := New(mux, Options{MeterProvider: mp})
		require.NoError(t, err)
		require.NoError(t, srv.Close())
	})
	prefixes := []string{"rpc.server.", "sluice.admission.", "sluice.server.", "sluice.governor.", "sluice.codec."}
	require.ElementsMatch(t, created, documentedMetrics(t, "../docs/observability.md", prefixes))
}

// instrumentNames returns the names of the instruments run creates on the
// MeterProvider it is given (an SDK provider whose view sees each one).
func instrumentNames(t *testing.T, run func(metric.MeterProvider)) []string {
	t.Helper()
	var (
		mu    sync.Mutex
		names []string
	)
	mp := sdkmetric.NewMeterProvider(
		sdkmetric.WithReader(sdkmetric.NewManualReader()),
		sdkmetric.WithView(func(i sdkmetric.Instrument) (sdkmetric.Stream, bool) {
			mu.Lock()
			defer mu.Unlock()
			if !slices.Contains(names, i.Name) {
				names = append(names, i.Name)
			}
			return sdkmetric.Stream{}, false
		}))
	defer func() { require.NoError(t, mp.Shutdown(context.Background())) }()
	run(mp)
	mu.Lock()
	defer mu.Unlock()
	require.NotEmpty(t, names)
	return slices.Clone(names)
}

var metricName = regexp.MustCompile("`((?:rpc|sluice)\\.[a-z_.]+)`")

// documentedMetrics returns the instrument names in the first cell of the
// tables of path that start with one of prefixes.
func documentedMetrics(t *testing.T, path string, prefixes []string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var names []string
	for line := range strings.Lines(string(b)) {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		first := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")[0]
		for _, m := range metricName.FindAllStringSubmatch(first, -1) {
			if slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(m[1], p) }) {
				require.NotContains(t, names, m[1], "%s lists %s twice", path, m[1])
				names = append(names, m[1])
			}
		}
	}
	return names
}

var enumAttr = regexp.MustCompile("`([a-z_.]+)`=((?:`[a-z_]+`(?:\\\\\\|)?)+)")

// TestTheMetricsTablesAttributeValuesAreTheObservedOnes: where
// docs/observability.md enumerates an attribute's values (`reason`=`a`\|`b`),
// they are exactly the values the server observes, for every instrument
// observed on its first collection (the observable ones: histograms only
// appear with traffic).
func TestTheMetricsTablesAttributeValuesAreTheObservedOnes(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer func() { require.NoError(t, mp.Shutdown(context.Background())) }()
	mux := NewMux()
	mux.HandleRaw("svc", "M", func(context.Context, []byte) ([]byte, error) { return nil, nil })
	srv, err := New(mux, Options{MeterProvider: mp})
	require.NoError(t, err)
	defer func() { require.NoError(t, srv.Close()) }()
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	observed := map[string]map[string][]string{} // instrument -> key -> values
	add := func(name string, set attribute.Set) {
		for _, kv := range set.ToSlice() {
			if observed[name] == nil {
				observed[name] = map[string][]string{}
			}
			if v := kv.Value.Emit(); !slices.Contains(observed[name][string(kv.Key)], v) {
				observed[name][string(kv.Key)] = append(observed[name][string(kv.Key)], v)
			}
		}
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					add(m.Name, p.Attributes)
				}
			case metricdata.Gauge[int64]:
				for _, p := range d.DataPoints {
					add(m.Name, p.Attributes)
				}
			}
		}
	}
	b, err := os.ReadFile("../docs/observability.md")
	require.NoError(t, err)
	checked := 0
	for line := range strings.Lines(string(b)) {
		// Split on the cell separators, not on the escaped \| inside cells.
		cells := strings.Split(strings.Trim(strings.TrimSpace(strings.ReplaceAll(line, `\|`, "\x00")), "|"), "|")
		for i := range cells {
			cells[i] = strings.ReplaceAll(cells[i], "\x00", `\|`)
		}
		if !strings.HasPrefix(line, "| `") || len(cells) < 4 {
			continue
		}
		for _, nm := range metricName.FindAllStringSubmatch(cells[0], -1) {
			got, ok := observed[nm[1]]
			if !ok {
				continue
			}
			for _, e := range enumAttr.FindAllStringSubmatch(cells[3], -1) {
				var want []string
				for v := range strings.SplitSeq(e[2], `\|`) {
					want = append(want, strings.Trim(v, "`"))
				}
				require.ElementsMatch(t, want, got[e[1]], "%s's %s values", nm[1], e[1])
				checked++
			}
		}
	}
	require.GreaterOrEqual(t, checked, 6, "enumerations checked")
}
