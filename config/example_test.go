package config_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/sluicerpc/sluice/codecs"
	"github.com/sluicerpc/sluice/config"
	"github.com/sluicerpc/sluice/endpointpolicy"
	"github.com/sluicerpc/sluice/kernel"
	"github.com/sluicerpc/sluice/kernel/governor"
	"github.com/sluicerpc/sluice/limiters/concurrency"
	"github.com/sluicerpc/sluice/limiters/tokenbucket"
	"github.com/sluicerpc/sluice/limiters/window"
	"github.com/sluicerpc/sluice/server"
	"github.com/sluicerpc/sluice/spi"
)

var tenant = kernel.Selector{Name: "tenant", Version: 1, Key: func(f kernel.Facts) (string, bool) {
	if f.Metadata == nil {
		return "", false
	}
	return f.Metadata.Get("tenant")
}}

var selectors = config.Selectors{"tenant": tenant}

// wantExample is what testdata/example.yaml converts to.
func wantExample() config.ServerSettings {
	return config.ServerSettings{
		Admission: &kernel.Options{
			Global: kernel.Rule{Limits: []spi.Spec{concurrency.Spec(512), tokenbucket.ContinuousSpec(2000, 1000, time.Second)}},
			Services: map[string]kernel.Rule{
				"echo": {Limits: []spi.Spec{window.FixedSpec(600, time.Minute)}},
			},
			Methods: map[string]kernel.Rule{
				"echo/Say": {Limits: []spi.Spec{concurrency.Spec(16), window.SlidingSpec(100, 10*time.Second, 10)}},
			},
			Queue: kernel.QueuePolicy{MaxQueuedCalls: 128, MaxQueuedBytes: 4 << 20, MaxQueueDelay: 250 * time.Millisecond, QueueOneWayCalls: true},
			Partition: &kernel.PartitionPolicy{
				MaxPartitions: 1000, IdleTimeout: 5 * time.Minute,
				Rule: kernel.Rule{Limits: []spi.Spec{concurrency.Spec(8)}},
			},
		},
		Calls:       server.CallCapacity{PerConnection: 128, PerServer: 2048},
		Connections: server.ConnectionLimits{MaxConnections: 512, MaxHandshakes: 32, MaxHandshakesPerAddress: 4},
		Governor:    governor.Limits{Decodes: 2, RetainedBytes: 32 << 20, DecodedBytes: 128 << 20, StreamBytes: 16 << 20},
		Compression: codecs.Config{
			Codecs:         []spi.Codec{codecs.Zstd(), codecs.Gzip()},
			Policy:         codecs.Policy{MinSize: 2048, MinSaving: 128, MinSavingPercent: 10},
			Methods:        map[string]codecs.Policy{"echo/Blob": {MinSize: -1}},
			MaxDecodedSize: 16 << 20,
			DecodeRatio:    64,
			DecodeFloor:    512 << 10,
		},
		StreamWindow: 512 << 10,
	}
}

func checkExample(t *testing.T, path string) {
	t.Helper()
	doc, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	got, err := doc.ServerSettings(selectors)
	if err != nil {
		t.Fatal(err)
	}
	want := wantExample()
	// Funcs do not compare: check the selector's identity, then drop it.
	if got.Admission == nil || got.Admission.Partition == nil {
		t.Fatalf("admission or partition missing: %+v", got.Admission)
	}
	sel := got.Admission.Partition.Selector
	if sel.Name != "tenant" || sel.Version != 1 || sel.Key == nil {
		t.Fatalf("partition selector = %+v, want the registered tenant selector", sel)
	}
	got.Admission.Partition.Selector = kernel.Selector{}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("ServerSettings:\n got %+v\nwant %+v", got, want)
	}
	cs, err := doc.ClientSettings()
	if err != nil {
		t.Fatal(err)
	}
	wantCB := endpointpolicy.CircuitBreakerOptions{MinimumThroughput: 10, FailureRatio: 0.25, SamplingDuration: 20 * time.Second, BreakDuration: 5 * time.Second, HalfOpenMaxCalls: 2}
	if cs.CircuitBreaker == nil || !reflect.DeepEqual(*cs.CircuitBreaker, wantCB) {
		t.Fatalf("ClientSettings = %+v, want %+v", cs.CircuitBreaker, wantCB)
	}
	if _, err := endpointpolicy.NewCircuitBreaker(*cs.CircuitBreaker); err != nil {
		t.Fatalf("the endpoint policy rejects the converted breaker options: %v", err)
	}
}

func TestExampleYAML(t *testing.T) { checkExample(t, "testdata/example.yaml") }

// The same document as JSON (JSON is YAML) converts to the same settings.
func TestExampleJSON(t *testing.T) { checkExample(t, "testdata/example.json") }

// The converted settings are accepted by a real server: New enables the
// admission program (the kernel's own candidate checks) and applies every
// other setting.
func TestExampleStartsAServer(t *testing.T) {
	doc, err := config.Load("testdata/example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s, err := doc.ServerSettings(selectors)
	if err != nil {
		t.Fatal(err)
	}
	mux := server.NewMux()
	echo := func(_ context.Context, req []byte) ([]byte, error) { return req, nil }
	mux.HandleRaw("echo", "Say", echo)
	mux.HandleRaw("echo", "Blob", echo)
	srv, err := server.New(mux, server.Options{
		Admission:    s.Admission,
		Calls:        s.Calls,
		Connections:  s.Connections,
		Governor:     s.Governor,
		Compression:  s.Compression,
		StreamWindow: s.StreamWindow,
	})
	if err != nil {
		t.Fatalf("server.New rejects the example's settings: %v", err)
	}
	defer srv.Close()
	if !srv.Admission().Enabled() {
		t.Fatal("admission is not enabled")
	}
	if got := srv.CallCapacity(); got != s.Calls {
		t.Fatalf("CallCapacity = %+v, want %+v", got, s.Calls)
	}
	if got := srv.ConnectionLimits(); got != s.Connections {
		t.Fatalf("ConnectionLimits = %+v, want %+v", got, s.Connections)
	}
	if got := srv.GovernorLimits(); got != s.Governor {
		t.Fatalf("GovernorLimits = %+v, want %+v", got, s.Governor)
	}
}
