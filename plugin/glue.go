package plugin

import (
	"context"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/sluicerpc/sluice/plugin/internal/pb"
)

// limiterKindsPlugin is the go-plugin glue of the limiter kinds on both
// sides: served on the plugin side, opts on the host side. Dispensing it
// returns the host's *Plugin (without a process; Open adds it).
type limiterKindsPlugin struct {
	goplugin.NetRPCUnsupportedPlugin
	served []LimiterKindEntry
	opts   options
}

var _ goplugin.GRPCPlugin = (*limiterKindsPlugin)(nil)

func (p *limiterKindsPlugin) GRPCServer(_ *goplugin.GRPCBroker, s *grpc.Server) error {
	pb.RegisterLimiterKindServer(s, newKindServer(p.served))
	return nil
}

func (p *limiterKindsPlugin) GRPCClient(ctx context.Context, _ *goplugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return newPlugin(ctx, pb.NewLimiterKindClient(c), p.opts)
}
