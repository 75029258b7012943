package plugin

import (
	"testing"
	"time"

	goplugin "github.com/hashicorp/go-plugin"

	"github.com/sluicerpc/sluice/spi"
)

// ConnectInProcess serves kind through the real gRPC bridge inside the test
// process (go-plugin's TestPluginGRPCConn) and returns the host side. The
// connection is closed when the test ends.
func ConnectInProcess(t testing.TB, kind spi.LimiterKind, opts ...Option) *LimiterKindClient {
	t.Helper()
	return ConnectInProcessConfig(t, ServeConfig{LimiterKinds: []LimiterKindEntry{{Kind: kind}}}, opts...).kinds[0]
}

// ConnectInProcessConfig serves c through the real gRPC bridge inside the
// test process and returns the host side.
func ConnectInProcessConfig(t testing.TB, c ServeConfig, opts ...Option) *Plugin {
	t.Helper()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	logger := c.Logger
	if logger == nil {
		logger = o.log()
	}
	set := servedPluginSet(c, logger)
	set[limiterKindsPluginName].(*limiterKindsPlugin).opts = o
	client, server := goplugin.TestPluginGRPCConn(t, false, set)
	t.Cleanup(func() {
		// Close asks the server to stop (go-plugin's controller Shutdown);
		// calling server.Stop as well would race inside go-plugin.
		_ = client.Close()
		select {
		case <-server.DoneCh:
		case <-time.After(time.Minute):
			t.Error("the in-process plugin server did not stop")
		}
	})
	raw, err := client.Dispense(limiterKindsPluginName)
	if err != nil {
		t.Fatalf("dispense: %v", err)
	}
	p := raw.(*Plugin)
	t.Cleanup(func() { _ = p.Close() }) // runs before the connection closes
	return p
}

// WithManualCallWatch leaves the call watch without its watchdog: its clock
// advances only by TickCallWatch, so no call times out unless the test
// says so, however slow the machine.
func WithManualCallWatch() Option { return func(o *options) { o.manualWatch = true } }

// CallWatchTicks is how many ticks of the call watch make one call timeout.
const CallWatchTicks = watchTicks

// TickCallWatch advances the call watch of p (made WithManualCallWatch) by
// one tick, as its watchdog would every quarter of the call timeout, and
// returns how many calls in flight it found overdue (then every call in
// flight fails).
func TickCallWatch(p *Plugin) int { return p.watch.tick() }
