package plugin

import (
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"

	"github.com/sluicerpc/sluice/plugin/internal/testkind"
)

// TestHostReadsOldBinaryAsServingNoPolicy: a binary built before the
// endpoint policy service (it registers the limiter service alone) answers
// Policies with Unimplemented; the host loads its kinds and sees no
// policy. This is why adding the service kept ProtocolVersion at 2.
func TestHostReadsOldBinaryAsServingNoPolicy(t *testing.T) {
	o := defaultOptions()
	o.logger = hclog.NewNullLogger()
	client, server := goplugin.TestPluginGRPCConn(t, false, goplugin.PluginSet{
		limiterKindsPluginName: &limiterKindsPlugin{served: []LimiterKindEntry{{Kind: testkind.Kind{}}}, opts: o},
	})
	t.Cleanup(func() {
		_ = client.Close()
		select {
		case <-server.DoneCh:
		case <-time.After(time.Minute):
			t.Error("the in-process plugin server did not stop")
		}
	})
	raw, err := client.Dispense(limiterKindsPluginName)
	if err != nil {
		t.Fatal(err)
	}
	p := raw.(*Plugin)
	defer func() { _ = p.Close() }()
	if len(p.LimiterKinds()) != 1 || len(p.EndpointPolicies()) != 0 {
		t.Fatalf("kinds %v, policies %v; want one kind and no policy", p.names(), p.EndpointPolicies())
	}
	if _, err := p.NewEndpointPolicy("any"); err == nil {
		t.Fatal("NewEndpointPolicy of a plugin serving no policy succeeded")
	}
}
