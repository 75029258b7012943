// Package rawecho is a go-plugin gRPC plugin that answers the bridge's
// TryAcquire and Release messages with fixed replies and no bridge logic:
// no kind lookup, no limiter, no time conversion, no panic recovery. It is
// the baseline of BenchmarkPluginBridge, a raw go-plugin round trip of the
// same size as the bridge's.
package rawecho

import (
	"context"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/sluicerpc/sluice/plugin/internal/pb"
)

// Name is the go-plugin name of the raw plugin.
const Name = "sluice.raw_echo"

// Plugin is the go-plugin glue; dispensing it returns a
// pb.LimiterKindClient.
type Plugin struct {
	goplugin.NetRPCUnsupportedPlugin
}

var _ goplugin.GRPCPlugin = (*Plugin)(nil)

// GRPCServer registers the echo server.
func (*Plugin) GRPCServer(_ *goplugin.GRPCBroker, s *grpc.Server) error {
	pb.RegisterLimiterKindServer(s, server{})
	return nil
}

// GRPCClient returns the generated client, used as is.
func (*Plugin) GRPCClient(_ context.Context, _ *goplugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return pb.NewLimiterKindClient(c), nil
}

type server struct {
	pb.UnimplementedLimiterKindServer
}

// TryAcquire grants, as the bridge's reply to a granted acquire does.
func (server) TryAcquire(context.Context, *pb.UnitsRequest) (*pb.DecisionReply, error) {
	return &pb.DecisionReply{Granted: true}, nil
}

// Release answers as the bridge's Release does.
func (server) Release(context.Context, *pb.UnitsRequest) (*pb.Empty, error) {
	return &pb.Empty{}, nil
}
