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
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	client, server := goplugin.TestPluginGRPCConn(t, false, goplugin.PluginSet{
		limiterKindPluginName: &limiterKindPlugin{impl: kind, opts: o},
	})
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
	raw, err := client.Dispense(limiterKindPluginName)
	if err != nil {
		t.Fatalf("dispense: %v", err)
	}
	return raw.(*LimiterKindClient)
}
