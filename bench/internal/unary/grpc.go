package unary

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/sluicerpc/sluice/bench/internal/rawcodec"
)

type echoServer interface{}

var echoDesc = grpc.ServiceDesc{
	ServiceName: "echo",
	HandlerType: (*echoServer)(nil),
	Methods: []grpc.MethodDesc{{
		MethodName: "Say",
		Handler: func(_ any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
			var in []byte
			if err := dec(&in); err != nil {
				return nil, err
			}
			return &in, nil
		},
	}},
}

// GRPC is grpc-go's unary echo over TCP loopback with the raw codec.
func GRPC() System {
	return System{Name: "grpc-go", Start: func() (Caller, func(), error) {
		srv := grpc.NewServer(grpc.ForceServerCodec(rawcodec.Codec{}))
		srv.RegisterService(&echoDesc, struct{}{})
		l, err := listen()
		if err != nil {
			return nil, nil, err
		}
		go func() { _ = srv.Serve(l) }()
		cc, err := grpc.NewClient(l.Addr().String(),
			grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithDefaultCallOptions(grpc.ForceCodec(rawcodec.Codec{})))
		if err != nil {
			srv.Stop()
			return nil, nil, err
		}
		stop := func() {
			_ = cc.Close()
			srv.Stop()
		}
		return func(ctx context.Context, body []byte) ([]byte, error) {
			var out []byte
			if err := cc.Invoke(ctx, "/echo/Say", &body, &out); err != nil {
				return nil, err
			}
			return out, nil
		}, stop, nil
	}}
}
