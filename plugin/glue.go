package plugin

import (
	"context"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/sluicerpc/sluice/plugin/internal/pb"
)

// limiterKindsPlugin is the go-plugin glue of the limiter kinds on both
// sides: served on the plugin side, opts on the host side. Dispensing it
// returns the host's *Plugin (without a process; Open adds it), with the
// clients of every service: limiter kinds, endpoint policies and codecs.
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
	return newPlugin(ctx, pb.NewLimiterKindClient(c), pb.NewEndpointPolicyClient(c), pb.NewCodecClient(c), p.opts)
}

// endpointPoliciesPlugin serves a binary's endpoint policies. go-plugin
// serves every plugin of a binary on one gRPC server, so the host reaches
// the EndpointPolicy service over the connection it dispensed the limiter
// kinds plugin on: *Plugin holds both clients, and the host never
// dispenses this name (GRPCClient returns the raw service client).
type endpointPoliciesPlugin struct {
	goplugin.NetRPCUnsupportedPlugin
	served []EndpointPolicyEntry
	logger hclog.Logger
}

var _ goplugin.GRPCPlugin = (*endpointPoliciesPlugin)(nil)

func (p *endpointPoliciesPlugin) GRPCServer(_ *goplugin.GRPCBroker, s *grpc.Server) error {
	pb.RegisterEndpointPolicyServer(s, newPolicyServer(p.served, p.logger))
	return nil
}

func (p *endpointPoliciesPlugin) GRPCClient(_ context.Context, _ *goplugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return pb.NewEndpointPolicyClient(c), nil
}

// codecsPlugin serves a binary's codecs; like the endpoint policies, the
// host reaches them over the limiter kinds plugin's connection and never
// dispenses this name.
type codecsPlugin struct {
	goplugin.NetRPCUnsupportedPlugin
	served []CodecEntry
}

var _ goplugin.GRPCPlugin = (*codecsPlugin)(nil)

func (p *codecsPlugin) GRPCServer(_ *goplugin.GRPCBroker, s *grpc.Server) error {
	pb.RegisterCodecServer(s, newCodecServer(p.served))
	return nil
}

func (p *codecsPlugin) GRPCClient(_ context.Context, _ *goplugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return pb.NewCodecClient(c), nil
}

// servedPluginSet is what a plugin binary serves for c: the limiter kinds
// (possibly none, answering an empty list), the endpoint policies and the
// codecs.
func servedPluginSet(c ServeConfig, logger hclog.Logger) goplugin.PluginSet {
	return goplugin.PluginSet{
		limiterKindsPluginName:     &limiterKindsPlugin{served: c.LimiterKinds},
		endpointPoliciesPluginName: &endpointPoliciesPlugin{served: c.EndpointPolicies, logger: logger},
		codecsPluginName:           &codecsPlugin{served: c.Codecs},
	}
}

// hostPluginSet is what a host dispenses: the limiter kinds plugin, whose
// client is the *Plugin with every service.
func hostPluginSet(o options) goplugin.PluginSet {
	return goplugin.PluginSet{limiterKindsPluginName: &limiterKindsPlugin{opts: o}}
}
