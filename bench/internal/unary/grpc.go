package unary

import (
	"context"

	"google.golang.org/grpc"
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
	return System{Name: "grpc-go", Start: func() (Caller, func(), error) { return startGRPC() }}
}
