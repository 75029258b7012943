package client

import (
	"context"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// TestTheMetricsTableIsTheInstruments (issue 25 section 4):
// docs/observability.md lists every instrument the client creates, and
// every client name it lists is one the client creates.
func TestTheMetricsTableIsTheInstruments(t *testing.T) {
	var (
		mu      sync.Mutex
		created []string
	)
	mp := sdkmetric.NewMeterProvider(
		sdkmetric.WithReader(sdkmetric.NewManualReader()),
		sdkmetric.WithView(func(i sdkmetric.Instrument) (sdkmetric.Stream, bool) {
			mu.Lock()
			defer mu.Unlock()
			if !slices.Contains(created, i.Name) {
				created = append(created, i.Name)
			}
			return sdkmetric.Stream{}, false
		}))
	defer func() { require.NoError(t, mp.Shutdown(context.Background())) }()
	m, err := newClientMetrics(mp, &Client{})
	require.NoError(t, err)
	m.close()

	b, err := os.ReadFile("../docs/observability.md")
	require.NoError(t, err)
	name := regexp.MustCompile("`((?:rpc|sluice)\\.[a-z_.]+)`")
	var documented []string
	for line := range strings.Lines(string(b)) {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		first := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")[0]
		for _, m := range name.FindAllStringSubmatch(first, -1) {
			if strings.HasPrefix(m[1], "rpc.client.") || strings.HasPrefix(m[1], "sluice.client.") {
				documented = append(documented, m[1])
			}
		}
	}
	mu.Lock()
	defer mu.Unlock()
	require.NotEmpty(t, created)
	require.ElementsMatch(t, created, documented)
}
